//! Reading the dimension digest a bootstrap dimension ends with (the SUMMARIZE phase asks for
//! `{"dimensionDigest": {...}}` in a JSON fence, see `exploration/texts.rs`).

use super::DimensionDigest;

impl DimensionDigest {
    /// The digest in a model's final reply: the first JSON object of the reply (fenced or
    /// not) that is `{"dimensionDigest": {...}}` or a bare digest with a summary. `None` when
    /// the reply has none, so a dimension without a digest keeps its analysis text as summary.
    pub fn from_reply(reply: &str) -> Option<DimensionDigest> {
        let mut rest = reply;
        while let Some(start) = rest.find('{') {
            let candidate = &rest[start..];
            let mut objects =
                serde_json::Deserializer::from_str(candidate).into_iter::<serde_json::Value>();
            if let Some(Ok(value)) = objects.next() {
                let inner = value.get("dimensionDigest").cloned().unwrap_or(value);
                if let Ok(digest) = serde_json::from_value::<DimensionDigest>(inner)
                    && (!digest.summary.trim().is_empty() || !digest.cross_refs.is_empty())
                {
                    return Some(digest);
                }
            }
            rest = &candidate[1..];
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_read_from_a_fenced_reply_and_junk_yields_none() {
        let reply = "Done.\n```json\n{\"dimensionDigest\": {\"summary\": \"Layers.\", \"candidateCount\": 2, \"crossRefs\": {\"networking\": \"check retries\"}, \"gaps\": [\"db\"]}}\n```";
        let d = DimensionDigest::from_reply(reply).unwrap();
        assert_eq!(d.summary, "Layers.");
        assert_eq!(d.candidate_count, 2);
        assert_eq!(d.cross_refs["networking"], "check retries");
        assert_eq!(d.gaps, ["db"]);
        let bare = DimensionDigest::from_reply("{\"summary\": \"S\"}").unwrap();
        assert_eq!(bare.summary, "S");
        assert_eq!(DimensionDigest::from_reply("no json {here"), None);
        assert_eq!(DimensionDigest::from_reply("{\"other\": 1}"), None);
        // A digest whose count is not a number is not taken as one.
        assert_eq!(
            DimensionDigest::from_reply("{\"summary\": \"S\", \"candidateCount\": \"two\"}"),
            None
        );
    }
}
