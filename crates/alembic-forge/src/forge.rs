//! The waterfall: reuse, else compose, else generate — cheapest first. Each mode that does not
//! apply says why, and a request no mode can serve fails with all the reasons (the reference
//! reported every failure as a failed "generate").

use std::collections::BTreeMap;
use std::time::Duration;

use alembic_tools::Allowlist;
use serde::Serialize;

use crate::compose::{CompositionSpec, DynamicComposer, composed_tool};
use crate::error::ForgeError;
use crate::generate::{
    CodeGenerator, GenerateRequest, TestResult, generate_verified, generated_tool_definition,
};
use crate::reuse::{
    AliasSpec, ForgeRequest, ReuseMatch, alias_name, alias_tool, best_reuse, find_reuse,
};
use crate::sandbox::{SandboxLimits, ToolBridge};
use crate::temporary::{DEFAULT_TTL, ForgeMode, TemporaryToolRegistry};

/// What one forge produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForgeOutcome {
    pub mode: ForgeMode,
    /// The tool to call (an existing tool when reuse needed no pre-filled arguments).
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse: Option<ReuseMatch>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestResult>,
}

/// Inputs beyond the request: what the caller may use and what it offers for each mode.
pub struct ForgeInputs<'a> {
    pub allowlist: &'a Allowlist,
    /// A composition to register when reuse finds nothing.
    pub composition: Option<CompositionSpec>,
    /// Without `composition`: templates the composer plans one from.
    pub composer: Option<&'a DynamicComposer>,
    /// Code generation, used only when generate mode is on.
    pub generator: Option<(&'a dyn CodeGenerator, ToolBridge)>,
}

/// Forges tools into a [`TemporaryToolRegistry`].
#[derive(Debug, Clone)]
pub struct ToolForge {
    pub temporary: TemporaryToolRegistry,
    pub ttl: Duration,
    pub limits: SandboxLimits,
    pub generate_allowed: bool,
}

impl ToolForge {
    pub fn new(temporary: TemporaryToolRegistry, generate_allowed: bool) -> Self {
        ToolForge {
            temporary,
            ttl: DEFAULT_TTL,
            limits: SandboxLimits::default(),
            generate_allowed,
        }
    }

    /// Runs the waterfall for `request`.
    pub async fn forge(
        &self,
        request: &ForgeRequest,
        inputs: ForgeInputs<'_>,
    ) -> Result<ForgeOutcome, ForgeError> {
        let mut reasons = Vec::new();
        match self.reuse(request, inputs.allowlist) {
            Ok(outcome) => return Ok(outcome),
            Err(e) => reasons.push(format!("reuse: {e}")),
        }
        match self.composition(
            request,
            inputs.composition,
            inputs.composer,
            inputs.allowlist,
        ) {
            Ok(spec) => match self.compose(spec) {
                Ok(outcome) => return Ok(outcome),
                Err(e) => reasons.push(format!("compose: {e}")),
            },
            Err(e) => reasons.push(format!("compose: {e}")),
        }
        match (self.generate_allowed, inputs.generator) {
            (false, _) => reasons.push(format!("generate: {}", ForgeError::GenerateDisabled)),
            (true, None) => reasons.push("generate: no code generator is configured".into()),
            (true, Some((generator, bridge))) => match self
                .generate(request, generator, bridge, inputs.allowlist)
                .await
            {
                Ok(outcome) => return Ok(outcome),
                Err(e) => reasons.push(format!("generate: {e}")),
            },
        }
        Err(ForgeError::Exhausted {
            reasons: reasons.join("; "),
        })
    }

    /// The composition offered, else the composer's plan for `request`.
    fn composition(
        &self,
        request: &ForgeRequest,
        offered: Option<CompositionSpec>,
        composer: Option<&DynamicComposer>,
        allowlist: &Allowlist,
    ) -> Result<CompositionSpec, ForgeError> {
        match (offered, composer) {
            (Some(spec), _) => Ok(spec),
            (None, Some(composer)) => {
                composer.plan(request, self.temporary.registry()?.as_ref(), allowlist)
            }
            (None, None) => Err(ForgeError::NoComposition),
        }
    }

    /// Reuse: an existing tool, registered as an alias when arguments are pre-filled.
    pub fn reuse(
        &self,
        request: &ForgeRequest,
        allowlist: &Allowlist,
    ) -> Result<ForgeOutcome, ForgeError> {
        let registry = self.temporary.registry()?;
        let Some(found) = find_reuse(&registry, allowlist, request) else {
            let best = best_reuse(&registry, allowlist, request).map_or(0.0, |m| m.score);
            return Err(ForgeError::NoReuseMatch {
                best,
                threshold: crate::reuse::REUSE_THRESHOLD,
            });
        };
        if found.preset_args.is_empty() {
            return Ok(ForgeOutcome {
                mode: ForgeMode::Reuse,
                tool: found.tool.clone(),
                reuse: Some(found),
                tests: Vec::new(),
            });
        }
        let spec = AliasSpec {
            name: alias_name(&found.tool, &request.target),
            tool: found.tool.clone(),
            preset_args: found.preset_args.clone(),
            description: None,
        };
        let definition = alias_tool(&spec, &registry).ok_or_else(|| ForgeError::UnknownTool {
            name: found.tool.clone(),
        })?;
        self.temporary
            .register(definition, ForgeMode::Reuse, Some(self.ttl))?;
        Ok(ForgeOutcome {
            mode: ForgeMode::Reuse,
            tool: spec.name,
            reuse: Some(found),
            tests: Vec::new(),
        })
    }

    /// Compose: validate and register a composition.
    pub fn compose(&self, spec: CompositionSpec) -> Result<ForgeOutcome, ForgeError> {
        let registry = self.temporary.registry()?;
        spec.validate(&|n| registry.contains(n), &BTreeMap::new())?;
        let name = spec.name.clone();
        self.temporary.register(
            composed_tool(spec, &registry),
            ForgeMode::Compose,
            Some(self.ttl),
        )?;
        Ok(ForgeOutcome {
            mode: ForgeMode::Compose,
            tool: name,
            reuse: None,
            tests: Vec::new(),
        })
    }

    /// Generate: write, verify, and only then register.
    pub async fn generate(
        &self,
        request: &ForgeRequest,
        generator: &dyn CodeGenerator,
        bridge: ToolBridge,
        allowlist: &Allowlist,
    ) -> Result<ForgeOutcome, ForgeError> {
        if !self.generate_allowed {
            return Err(ForgeError::GenerateDisabled);
        }
        let ask = GenerateRequest {
            description: format!(
                "{} (action: {}, target: {})",
                request.intent, request.action, request.target
            ),
            available_tools: self.temporary.registry()?.schemas(allowlist),
            feedback: None,
        };
        let (tool, tests) = generate_verified(generator, ask, bridge, &self.limits, 2).await?;
        self.temporary.register(
            generated_tool_definition(&tool, self.limits.clone()),
            ForgeMode::Generate,
            Some(self.ttl),
        )?;
        Ok(ForgeOutcome {
            mode: ForgeMode::Generate,
            tool: tool.name,
            reuse: None,
            tests,
        })
    }
}
