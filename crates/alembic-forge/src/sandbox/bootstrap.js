// Evaluated once per fresh context, before the guest code. It receives the two host functions
// and returns the `tools` object handed to the handler plus the driver the host calls. Nothing
// here is global: the host functions live only in this closure. The originals of JSON.parse and
// JSON.stringify are captured before guest code can replace them. The output cap is checked by
// the host, in UTF-8 bytes, where the text crosses back (`text.length` here counts UTF-16
// units: an emoji is 2 of them and 4 bytes).
(function (hostCall, hostLog) {
  "use strict";
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const StringCtor = String;
  const TypeErrorCtor = TypeError;

  function describe(e) {
    try {
      if (e !== null && typeof e === "object" && "message" in e) {
        const name = e.name === undefined ? "Error" : StringCtor(e.name);
        return (name + ": " + StringCtor(e.message)).slice(0, 2000);
      }
      return ("thrown value: " + StringCtor(e)).slice(0, 2000);
    } catch (_) {
      return "a value that cannot be printed was thrown";
    }
  }

  function show(v) {
    if (typeof v === "string") return v;
    try {
      const s = stringify(v);
      return s === undefined ? StringCtor(v) : s;
    } catch (_) {
      return StringCtor(v);
    }
  }

  const tools = Object.freeze({
    call: function (name, args) {
      if (typeof name !== "string") throw new TypeErrorCtor("tools.call: the tool name must be a string");
      const text = args === undefined ? "{}" : stringify(args);
      if (text === undefined) throw new TypeErrorCtor("tools.call: arguments must be a JSON object");
      return parse(hostCall(name, text));
    },
  });

  const console = Object.freeze({
    log: function () {
      const parts = [];
      for (let i = 0; i < arguments.length; i++) parts.push(show(arguments[i]));
      hostLog(parts.join(" "));
    },
  });

  function settle(state, value) {
    state.done = true;
    if (value === undefined) {
      state.out = "null";
      return;
    }
    let text;
    try {
      text = stringify(value);
    } catch (e) {
      state.kind = "not_json";
      state.err = describe(e);
      return;
    }
    if (text === undefined) {
      state.kind = "not_json";
      state.err = "the handler returned a " + typeof value + ", which has no JSON form";
    } else {
      state.out = text;
    }
  }

  function fail(state, e) {
    state.done = true;
    state.kind = "thrown";
    state.err = describe(e);
  }

  // Calls the handler once. The returned state object is completed synchronously or, for an
  // async handler, by the promise jobs the host drives afterwards.
  function drive(handler, paramsJson) {
    const state = { done: false, kind: "ok", out: undefined, err: undefined };
    let result;
    try {
      result = handler(parse(paramsJson), tools);
    } catch (e) {
      fail(state, e);
      return state;
    }
    if (result !== null && typeof result === "object" && typeof result.then === "function") {
      Promise.resolve(result).then(
        function (v) { settle(state, v); },
        function (e) { fail(state, e); }
      );
    } else {
      settle(state, result);
    }
    return state;
  }

  return { console: console, drive: drive };
})
