#include "isolate/isolate_runner.h"

#include <v8.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "isolate/globals_snapshot.h"
#include "isolate/host_functions.h"
#include "isolate/v8_platform.h"

using namespace codemode;
using namespace codemode::isolate;

namespace {

config::Limits test_limits() {
  config::Limits limits;
  limits.cpu_ms = 200;
  limits.wall_ms = 2000;
  limits.heap_mb = 32;
  return limits;
}

channel::Outcome run(std::string_view code, const config::Limits& limits = test_limits(),
                     channel::Tool tool = channel::Tool::execute,
                     const openapi::Document* api = nullptr) {
  std::optional<openapi::DocumentImage> image;
  if (api != nullptr) image = std::get<openapi::DocumentImage>(openapi::DocumentImage::build(*api));
  return run_in_fresh_isolate(RunRequest{tool, code, &limits, image ? &*image : nullptr, nullptr});
}

// The two contexts an execute call runs in, each made from its own snapshot blob: without
// fetch() and with it.
constexpr std::array kBothContexts{FetchGlobal::absent, FetchGlobal::present};

// Runs `code` as an execute call in a fresh isolate of the context `fetch` names. With fetch(),
// its Fetcher answers nothing: the code these tests run never calls it.
channel::Outcome run_execute(std::string_view code, FetchGlobal fetch,
                             const config::Limits& limits = test_limits()) {
  static const channel::Fetcher kNeverCalled = [](const gateway::OutboundRequest&,
                                                  const channel::FetchDone&) {};
  return run_in_fresh_isolate(RunRequest{channel::Tool::execute, code, &limits, nullptr, nullptr,
                                         fetch == FetchGlobal::present ? &kNeverCalled : nullptr});
}

// A Document straight from JSON text, without the checks a served API must pass.
openapi::Document document(std::string_view text) {
  return openapi::make_document(nlohmann::ordered_json::parse(text));
}

std::string ok(std::string_view code) {
  channel::Outcome o = run(code);
  INFO(code << " -> " << to_string(o.error_kind) << ": " << o.error_message);
  REQUIRE(o.ok);
  return o.result_json;
}

std::string failure(std::string_view code, const config::Limits& limits = test_limits()) {
  channel::Outcome o = run(code, limits);
  INFO(code << " -> " << o.result_json);
  REQUIRE_FALSE(o.ok);
  return std::string(to_string(o.error_kind)) + ": " + o.error_message;
}

}  // namespace

TEST_CASE("the value of the async function is the JSON result", "[sandbox][result]") {
  CHECK(ok("async () => ({a: [1, 2], b: await Promise.resolve('x')})") == R"({"a":[1,2],"b":"x"})");
  CHECK(ok("async function () { return 7; }") == "7");
  CHECK(ok("() => 'sync functions work too'") == R"("sync functions work too")");
  CHECK(ok("async () => {}") == "null");
  CHECK(ok("async () => undefined") == "null");
  CHECK(ok("async () => 12345678901234567890n") == R"("12345678901234567890")");
  CHECK(ok("async () => ({n: 1n, f() {}, s: Symbol('x')})") == R"({"n":"1"})");
  CHECK(ok("async () => () => 1") == "null");
  CHECK(ok("async () => 'ünï😀'") == R"("ünï😀")");
  CHECK(
      failure("async () => { const a = {}; a.self = a; return a; }")
          .starts_with("runtime: result is not JSON-serialisable: TypeError: Converting circular"));
  CHECK(failure("async () => ({toJSON() { throw new RangeError('nope'); }})") ==
        "runtime: result is not JSON-serialisable: RangeError: nope");
}

TEST_CASE("the set-up's rehearsal leaves nothing a call can see", "[sandbox][result]") {
  // Every prepared isolate runs `async () => 0` through a call's path before its call comes.
  const auto spec = document(R"({"openapi":"3.0.0","paths":{"/a":{}}})");
  for (channel::Tool tool : {channel::Tool::execute, channel::Tool::search}) {
    channel::Outcome same = run("async () => 0", test_limits(), tool, &spec);
    CHECK(same.ok);
    CHECK(same.result_json == "0");
    CHECK(same.logs.empty());
    channel::Outcome globals =
        run("async () => [Object.keys(globalThis), await Promise.resolve(1), JSON.stringify(0)]",
            test_limits(), tool, &spec);
    CHECK(globals.result_json ==
          (tool == channel::Tool::search ? R"([["spec"],1,"0"])" : R"([[],1,"0"])"));
  }
  CHECK(failure("async () => 0); (1") == "compile: SyntaxError: Unexpected token ')'");
}

TEST_CASE("errors carry the JS name and message, no host stack", "[sandbox][runtime]") {
  CHECK(failure("async () => { const x = 1; x(); }") == "runtime: TypeError: x is not a function");
  CHECK(failure("async () => { throw new Error('boom'); }") == "runtime: Error: boom");
  CHECK(failure("async () => Promise.reject(new RangeError('r'))") == "runtime: RangeError: r");
  CHECK(failure("async () => { throw 42; }") == "runtime: 42");
  CHECK(failure("() => { throw new SyntaxError('sync'); }") == "runtime: SyntaxError: sync");
  // A getter on the error is not run while reporting it.
  CHECK(failure("async () => { const e = new Error('m'); Object.defineProperty(e, 'message', "
                "{get() { for(;;){} }}); throw e; }")
            .starts_with("runtime: "));
  CHECK(failure("async () => { throw new Error('a\\nb'); }") == "runtime: Error: a b");
}

TEST_CASE("code that escapes its wrapper is a compile error", "[sandbox][compile]") {
  const char* smuggled[] = {
      "async () => 1); globalThis.ran = 1; (async () => 2",
      "async () => 1), (globalThis.ran = 1), (async () => 2",
      "async () => 1]: 0}); globalThis.ran = 1; ({[async () => 2",
      "async () => 1 /*",
      "async () => 1 */ ); globalThis.ran = 1; /*",
      "async () => `${1}",
      "async () => 1)\n;globalThis.ran = 1;\n(0",
      "async () => { return 1 }); globalThis.ran = 1; ((",
      "return 1 }); globalThis.ran = 1; (async () => {",
      "}}); globalThis.ran = 1; (async () => {{",
      "(async () => 1",
      "async () => 1)",
      "}",
      "async () => '\\",
      "",
  };
  for (const char* code : smuggled) {
    channel::Outcome o = run(code);
    INFO(code);
    CHECK_FALSE(o.ok);
    CHECK(o.error_kind == channel::ErrorKind::compile);
  }
  CHECK(failure("async () => 1); (2") == "compile: SyntaxError: Unexpected token ')'");
  // Comments, strings and regexes that contain brackets are fine.
  CHECK(ok("async () => 1 // trailing comment )]}") == "1");
  CHECK(ok("async () => 1 <!-- an HTML-like comment )") == "1");
  CHECK(ok("/* leading ) */ async () => ')]}' + `${'}'}` + /[)\\]]/.source") == R"(")]}}[)\\]]")");
  CHECK(ok("async () => {\n  const a = [1, 2];\n  return a.length;\n}\n") == "2");
}

TEST_CASE("the shapes models send run (the tools' contract)", "[sandbox][compile][shapes]") {
  // A function, named or anonymous, sync or async.
  CHECK(ok("async function main() { return 1; }") == "1");
  CHECK(ok("function () { return 2 }") == "2");
  CHECK(ok("() => 3") == "3");
  // Trailing semicolons and comments.
  CHECK(ok("async () => 4;") == "4");
  CHECK(ok("async () => 5; // done") == "5");
  // A bare expression is the value; one that awaits too.
  CHECK(ok("[1, 2].map((x) => x * 2)") == "[2,4]");
  CHECK(ok("await Promise.resolve(6)") == "6");
  CHECK(ok("Promise.resolve(7)") == "7");
  // Statements with return and top-level await.
  CHECK(ok("const a = await Promise.resolve(8);\nreturn a;") == "8");
  // Statements whose last one is the value; helpers before the function.
  CHECK(ok("const a = 4;\na * 2 + 1") == "9");
  CHECK(ok("const double = (x) => x * 2;\nasync () => double(5)") == "10");
  CHECK(ok("function helper() { return 11; }\nasync function main() { return helper(); }") == "11");
  // One markdown fence.
  CHECK(ok("```js\nasync () => 12\n```") == "12");
  CHECK(ok("```javascript\nconst x = 13;\nreturn x;\n```\n") == "13");
  // TypeScript, its types removed.
  CHECK(ok("async (): Promise<number> => { const n: number = 14; return n; }") == "14");
  CHECK(ok("```ts\ninterface P { id: string }\nconst p = {id: 'x'} as P;\n"
           "const q = p satisfies P;\nconst ids: Array<string> = [q!.id];\nreturn ids;\n```") ==
        R"(["x"])");
  CHECK(ok("type N = number;\nfunction f<T>(x: T): T { return x; }\nasync () => f<N>(15)") == "15");
  CHECK(ok("enum Color { Red, Green }\nColor.Green") == "1");
  // What used to be smuggling is a body now: it runs inside the call, in order.
  CHECK(ok("async () => 1; globalThis.ran = 16") == "16");
}

// The process's first call that strips types leaves sucrase.js's code cache for the later ones; a
// cache V8 rejects (another snapshot, a cache made before sucrase ran) would cost every later
// TypeScript call the compile it is meant to save, silently.
TEST_CASE("TypeScript calls after the first load sucrase from a code cache V8 accepts",
          "[sandbox][compile]") {
  CHECK(ok("async (): Promise<number> => { const n: number = 14; return n; }") == "14");
  const std::shared_ptr<const std::vector<std::uint8_t>> cache =
      detail::kept_code_cache(detail::Vendor::sucrase, FetchGlobal::absent);
  REQUIRE(cache != nullptr);
  // With sucrase's functions compiled by the strip, not only the bundle's top level.
  CHECK(cache->size() > 200'000);
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator(
      v8::ArrayBuffer::Allocator::NewDefaultAllocator());
  v8::Isolate::CreateParams params;
  params.array_buffer_allocator = allocator.get();
  params.snapshot_blob = detail::GlobalsSnapshot::get().blob(FetchGlobal::absent);
  params.external_references = detail::external_references();
  v8::Isolate* isolate = allocate_isolate();
  v8::Isolate::Initialize(isolate, params);
  {
    v8::Isolate::Scope isolate_scope(isolate);
    v8::ScriptCompiler::CachedData data(cache->data(), static_cast<int>(cache->size()),
                                        v8::ScriptCompiler::CachedData::BufferNotOwned);
    CHECK(data.CompatibilityCheck(isolate) == v8::ScriptCompiler::CachedData::kSuccess);
  }
  dispose_isolate(isolate);
  // Later calls strip with it, and report sucrase's errors as before.
  CHECK(ok("type N = number;\nfunction f<T>(x: T): T { return x; }\nasync () => f<N>(15)") == "15");
  channel::Outcome refused = run("async (x: number): string => {\n  return x +;\n}");
  CHECK(refused.error_kind == channel::ErrorKind::compile);
  CHECK(refused.error_detail.starts_with("line 2,"));
  // And in the other blob's isolates (execute with fetch), from that blob's own cache.
  for (int i = 0; i < 2; ++i) {
    CHECK(run_execute("async (): Promise<number> => 16", FetchGlobal::present).result_json == "16");
  }
  CHECK(detail::kept_code_cache(detail::Vendor::sucrase, FetchGlobal::present) != nullptr);
  CHECK(detail::code_cache_rejections() == 0);
}

TEST_CASE("a compile error quotes the line as sent with a caret, and hints", "[sandbox][compile]") {
  channel::Outcome o =
      run("async () => {\n  const r = await fetch('/v1/customers';\n  return r.status;\n}");
  REQUIRE_FALSE(o.ok);
  CHECK(o.error_kind == channel::ErrorKind::compile);
  CHECK(o.error_message == "SyntaxError: missing ) after argument list");
  CHECK(
      o.error_detail.starts_with("line 2, column 25:\n    const r = await fetch('/v1/customers';\n"
                                 "                          ^"));
  channel::Outcome fenced = run("```js\nasync () => {\n  return (;\n}\n```");
  CHECK(fenced.error_detail.starts_with("line 3, column 11:\n    return (;"));
  channel::Outcome module = run("import fs from 'fs';\nasync () => 1");
  CHECK(module.error_kind == channel::ErrorKind::compile);
  CHECK(module.error_detail.find("hint: modules are not available") != std::string::npos);
  // TypeScript that is wrong where V8 stops early: sucrase's reading of it is reported.
  channel::Outcome ts = run("async (x: number): string => {\n  return x +;\n}");
  CHECK(ts.error_kind == channel::ErrorKind::compile);
  CHECK(ts.error_detail.starts_with("line 2,"));
}

TEST_CASE("a comma expression is refused at the comma, not run as a body that returns nothing",
          "[sandbox][compile]") {
  channel::Outcome o = run("async () => 1, 17");
  REQUIRE_FALSE(o.ok);
  CHECK(o.error_kind == channel::ErrorKind::compile);
  CHECK(o.error_message.starts_with("SyntaxError: a comma joins two expressions"));
  CHECK(o.error_detail.starts_with("line 1, column 14:\n  async () => 1, 17\n               ^"));
  channel::Outcome fenced = run("```js\nasync () => {\n  return 1;\n},\nspec\n```");
  CHECK(fenced.error_kind == channel::ErrorKind::compile);
  CHECK(fenced.error_detail.starts_with("line 4, column 2:\n  },"));
  channel::Outcome typed = run("async (): Promise<number> => 1, 17");
  CHECK(typed.error_message.starts_with("SyntaxError: a comma joins two expressions"));
  // Commas inside the expression are its own business.
  CHECK(ok("async () => (1, 17)") == "17");
  CHECK(ok("[1, 2].map((x) => x * 2)") == "[2,4]");
  CHECK(ok("const a = 1, b = 2;\nreturn a + b;") == "3");
}

TEST_CASE("a runtime error names its line and column in the code as sent", "[sandbox][runtime]") {
  channel::Outcome o = run("async () => {\n  const list = {};\n  return list.items[0].id;\n}");
  REQUIRE_FALSE(o.ok);
  CHECK(o.error_message == "TypeError: Cannot read properties of undefined (reading '0')");
  CHECK(o.error_detail.starts_with("line 3, column "));
  CHECK(o.error_detail.find("return list.items[0].id;") != std::string::npos);
  channel::Outcome body = run("const a = 1;\nnull.x");
  CHECK(body.error_detail == "line 2, column 6:\n  null.x\n       ^");
  channel::Outcome fetch =
      run("async () => (await fetch('/x')).status", test_limits(), channel::Tool::search);
  CHECK(fetch.error_message == "ReferenceError: fetch is not defined");
  CHECK(fetch.error_detail.find("hint: search has no fetch") != std::string::npos);
  channel::Outcome require = run("async () => require('fs')");
  CHECK(require.error_detail.find("hint: modules are not available") != std::string::npos);
}

TEST_CASE("a value that is not JSON says what was returned", "[sandbox][result]") {
  CHECK(failure("async () => new Map([[1, 2]])") ==
        "runtime: result is not JSON-serialisable: TypeError: the code returned a Map, which "
        "JSON writes as {}: return Object.fromEntries(map)");
}

TEST_CASE("a result is serialised within result_chars and stays JSON", "[sandbox][result]") {
  config::Limits limits = test_limits();
  limits.result_chars = 200;
  channel::Outcome o =
      run("async () => Array.from({length: 1000}, (_, i) => ({i, s: 'x'.repeat(10)}))", limits);
  REQUIRE(o.ok);
  CHECK(o.result_cut);
  CHECK(o.result_json.size() <= 200);
  auto parsed = nlohmann::json::parse(o.result_json);
  REQUIRE(parsed.is_array());
  CHECK(parsed.back().get<std::string>().starts_with("…[cut: "));
  channel::Outcome text = run("async () => ({a: 'y'.repeat(100000)})", limits);
  REQUIRE(text.ok);
  CHECK(text.result_cut);
  CHECK(nlohmann::json::parse(text.result_json)["a"].get<std::string>().find("more characters]") !=
        std::string::npos);
  // A huge value costs what its first result_chars cost: no cpu limit, no heap limit.
  limits.cpu_ms = 100;
  channel::Outcome big =
      run("async () => { const a = []; for (let i = 0; i < 20; ++i) a.push(a.slice()); "
          "return a; }",
          limits);
  CHECK(big.ok);
  channel::Outcome small = run("async () => ({a: 1, b: [1, 2]})", limits);
  CHECK_FALSE(small.result_cut);
  CHECK(small.result_json == R"({"a":1,"b":[1,2]})");
}

TEST_CASE("cpu limit stops busy loops, microtask loops and catastrophic regexes",
          "[sandbox][limits]") {
  config::Limits limits = test_limits();
  limits.cpu_ms = 50;
  for (const char* code : {
           "async () => { while (true) {} }",
           "async () => { for (;;) await null; }",
           "async () => /(a+)+$/.test('a'.repeat(40) + 'b')",
           "async () => { await null; for(;;){try{while(true){}}catch{}finally{continue}} }",
           // Microtasks that never end, holding nothing: V8 14 runs a promise chain that grows
           // (`() => Promise.resolve().then(p)`) into the 32 MB heap limit first.
           "async () => { const p = () => queueMicrotask(p); p(); return new Promise(() => {}); }",
       }) {
    INFO(code);
    const auto start = std::chrono::steady_clock::now();
    CHECK(failure(code, limits) == "timeout: cpu limit 50 ms exceeded");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1000));
  }
}

TEST_CASE("wall limit covers time spent waiting on timers", "[sandbox][limits]") {
  config::Limits limits = test_limits();
  limits.wall_ms = 100;
  const auto start = std::chrono::steady_clock::now();
  CHECK(failure("async () => new Promise(r => setTimeout(r, 5000))", limits) ==
        "timeout: wall limit 100 ms exceeded");
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= std::chrono::milliseconds(90));
  CHECK(took < std::chrono::milliseconds(1000));
  CHECK(failure("async () => { for (;;) await new Promise(r => setTimeout(r, 1)); }", limits) ==
        "timeout: wall limit 100 ms exceeded");
}

TEST_CASE("a promise that can never settle is reported at once", "[sandbox][limits]") {
  const auto start = std::chrono::steady_clock::now();
  CHECK(failure("async () => new Promise(() => {})") ==
        "runtime: the promise never settled (nothing left that could settle it)");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
  CHECK(failure("async () => new Promise(r => { const t = setTimeout(r, 10); clearTimeout(t); })")
            .starts_with("runtime: the promise never settled"));
}

TEST_CASE("heap and ArrayBuffer bombs are memory errors, and the next call works",
          "[sandbox][limits][memory]") {
  config::Limits limits = test_limits();
  limits.cpu_ms = 5000;
  limits.wall_ms = 10000;
  limits.heap_mb = 16;
  CHECK(failure("async () => { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }", limits) ==
        "memory: heap limit 16 MB exceeded");
  CHECK(run("async () => 1", limits).result_json == "1");
  CHECK(failure("async () => { const a = []; for (;;) a.push(new ArrayBuffer(4 << 20)); }",
                limits) == "memory: ArrayBuffer limit 16 MB exceeded");
  CHECK(run("async () => new ArrayBuffer(1 << 20).byteLength", limits).result_json == "1048576");
  // Caught by the code: then it is just a RangeError the code handled.
  CHECK(
      run("async () => { try { new ArrayBuffer(64 << 20); } catch (e) { return e.name; } }", limits)
          .result_json == R"("RangeError")");
}

TEST_CASE("cancel from another thread stops the call", "[sandbox][cancel]") {
  config::Limits limits = test_limits();
  limits.cpu_ms = 60000;
  limits.wall_ms = 60000;
  // Runs `code` and cancels it from another thread once the code has called fetch(), its last
  // step before it spins or waits: the cancel meets a call under way, not one yet to start.
  const auto cancelled_once_fetched = [&limits](std::string_view code) {
    channel::CancelToken token;
    std::atomic<bool> go{false};  // the code fetched, or the call ended without fetching
    bool fetched = false;
    std::vector<channel::FetchDone> unanswered;  // dropped once the call has ended
    const channel::Fetcher fetcher = [&](const gateway::OutboundRequest&, channel::FetchDone done) {
      unanswered.push_back(std::move(done));
      fetched = true;
      go = true;
      go.notify_one();
    };
    std::thread canceller([&] {
      go.wait(false);
      token.cancel();
    });
    channel::Outcome o = run_in_fresh_isolate(
        RunRequest{channel::Tool::execute, code, &limits, nullptr, &token, &fetcher});
    go = true;
    go.notify_one();
    canceller.join();
    CHECK(fetched);
    return o;
  };

  channel::Outcome o = cancelled_once_fetched("async () => { fetch('/x'); for (;;) {} }");
  CHECK(o.error_kind == channel::ErrorKind::runtime);
  CHECK(o.error_message == "cancelled");

  o = cancelled_once_fetched(
      "async () => { fetch('/x'); return new Promise(r => setTimeout(r, 30000)); }");
  CHECK(o.error_message == "cancelled");

  channel::CancelToken early;
  early.cancel();
  o = run_in_fresh_isolate(
      RunRequest{channel::Tool::execute, "async () => 1", &limits, nullptr, &early});
  CHECK(o.error_message == "cancelled");
}

TEST_CASE("console output is captured and bounded", "[sandbox][globals]") {
  channel::Outcome o =
      run("async () => { console.log('a', 1, {b: [2, 'c']}, null, undefined); "
          "console.info('i'); console.warn('w'); console.error(new TypeError('e')); "
          "console.debug(1n, Symbol('s'), () => 1); const c = {}; c.c = c; console.log(c); "
          "console.log(new Map([[1, 2]]), new Set([3]), [1, [2, [3, [4]]]]); }");
  REQUIRE(o.ok);
  REQUIRE(o.logs.size() == 7);
  CHECK(o.logs[0] == R"(a 1 { b: [ 2, "c" ] } null undefined)");
  CHECK(o.logs[1] == "[info] i");
  CHECK(o.logs[2] == "[warn] w");
  CHECK(o.logs[3] == "[error] TypeError: e");
  CHECK(o.logs[4] == "[debug] 1n Symbol(s) [Function: (anonymous)]");
  CHECK(o.logs[5] == "{ c: [Circular] }");
  CHECK(o.logs[6] == "Map(1) { 1 => 2 } Set(1) { 3 } [ 1, [ 2, [ 3, [Array] ] ] ]");

  o = run("async () => { for (let i = 0; i < 500; ++i) console.log('line', i); }");
  REQUIRE(o.logs.size() == 101);
  CHECK(o.logs.back() == "…[400 more lines dropped]");
  o =
      run("async () => { console.log('x'.repeat(5000)); console.log('y'.repeat(5000)); "
          "console.log('z'); }");
  std::size_t total = 0;
  for (auto& line : o.logs) total += line.size();
  CHECK(total < 8100);
  CHECK(o.logs.back() == "…[1 more lines dropped]");
  // Logs survive a failure.
  o = run("async () => { console.log('before'); throw new Error('x'); }");
  CHECK(o.logs == std::vector<std::string>{"before"});
}

TEST_CASE("timers and microtasks run in order", "[sandbox][globals]") {
  CHECK(ok(R"(async () => {
    const order = [];
    setTimeout(() => order.push('t20'), 20);
    setTimeout(() => order.push('t0a'), 0);
    const id = setTimeout(() => order.push('cleared'), 5);
    setTimeout((a, b) => order.push('t0b' + a + b), 0, 1, 2);
    clearTimeout(id);
    queueMicrotask(() => order.push('micro'));
    Promise.resolve().then(() => order.push('then'));
    order.push('sync');
    await new Promise(r => setTimeout(r, 30));
    return order;
  })") == R"(["sync","micro","then","t0a","t0b12","t20"])");
  CHECK(failure("async () => { setTimeout('1 + 1', 0); }") ==
        "runtime: TypeError: setTimeout: callback must be a function");
  CHECK(failure("async () => { setTimeout(() => { throw new Error('in timer'); }, 0); "
                "await new Promise(r => setTimeout(r, 10)); }") == "runtime: Error: in timer");
}

TEST_CASE("web globals: structuredClone, atob/btoa, TextEncoder/TextDecoder",
          "[sandbox][globals]") {
  CHECK(ok("async () => { const o = {d: new Date(0), m: new Map([[1, {x: 1}]]), a: [1n]}; "
           "const c = structuredClone(o); return [c !== o, c.d instanceof Date, c.m.get(1).x, "
           "typeof c.a[0]]; }") == R"([true,true,1,"bigint"])");
  CHECK(failure("async () => structuredClone({f() {}})") ==
        "runtime: DataCloneError: f() {} could not be cloned.");
  CHECK(ok("async () => [btoa('hello'), atob('aGVsbG8='), atob(btoa('\\xff\\x00a'))]") ==
        R"(["aGVsbG8=","hello","ÿ\u0000a"])");
  CHECK(failure("async () => btoa('€')").starts_with("runtime: InvalidCharacterError"));
  CHECK(ok("async () => [...new TextEncoder().encode('é€😀')]") ==
        "[195,169,226,130,172,240,159,152,128]");
  CHECK(ok("async () => new TextDecoder().decode(new "
           "Uint8Array([0xEF,0xBB,0xBF,104,0xC3,0xA9,0xFF]))") == "\"hé\xEF\xBF\xBD\"");
  CHECK(failure(
            "async () => new TextDecoder('utf-8', {fatal: true}).decode(new Uint8Array([0xFF]))") ==
        "runtime: TypeError: TextDecoder.decode: the input is not valid UTF-8");
  CHECK(ok("async () => { const u = new Uint8Array(3); return new TextEncoder().encodeInto('a€', "
           "u); }") == R"({"read":1,"written":1})");
}

TEST_CASE("URL and URLSearchParams", "[sandbox][globals]") {
  CHECK(
      ok("async () => { const u = new URL('../d?x=1 2#f', 'HTTPS://User@Ex.COM:443/a/b/c'); "
         "return [u.href, u.origin, u.host, u.pathname, u.search, u.hash, u.username]; }") ==
      R"(["https://User@ex.com/a/d?x=1%202#f","https://ex.com","ex.com","/a/d","?x=1%202","#f","User"])");
  CHECK(
      ok("async () => { const u = new URL('https://a.test/p?a=1&b=2'); u.searchParams.append('c', "
         "'x y&z'); u.searchParams.delete('a'); return [u.href, u.searchParams.get('b'), "
         "[...new URLSearchParams({q: 'é', r: '~'})].length, new "
         "URLSearchParams('?q=%C3%A9+x').get('q')]; }") ==
      R"(["https://a.test/p?b=2&c=x+y%26z","2",2,"é x"])");
  CHECK(ok("async () => [new URL('http://0x7f.1:80/').href, URL.canParse('nope'), "
           "JSON.stringify({u: new URL('mailto:a@b.c')})]") ==
        R"(["http://127.0.0.1/",false,"{\"u\":\"mailto:a@b.c\"}"])");
  CHECK(failure("async () => new URL('relative/only')") ==
        "runtime: TypeError: Invalid URL: relative/only");
}

TEST_CASE("a call that uses URL loads whatwg-url.js from the process's code cache",
          "[sandbox][globals]") {
  // V8 refuses a cache made under other flags (they change once the globals snapshot is made)
  // or in an isolate of the other blob (one per context), and every such call compiles the
  // bundle again: both contexts, without fetch and with it.
  for (const FetchGlobal fetch : kBothContexts) {
    const channel::Outcome o =
        run_execute("async () => new URL('/a?b=1', 'http://x.test/').searchParams.get('b')", fetch);
    INFO(o.error_message);
    CHECK(o.result_json == R"("1")");
  }
  CHECK(detail::code_cache_rejections() == 0);
}

TEST_CASE("web.js made after the code replaced builtins uses bootstrap's captured ones",
          "[sandbox][globals]") {
  // js/web.js is compiled on the first use of one of its globals, after the code has run: the
  // builtins it uses are the ones bootstrap.js captured before any code, not the code's own.
  CHECK(ok("async () => {"
           " Math.max = () => 99; Math.trunc = () => 5; Date.now = () => 0;"
           " Promise.resolve = () => 'not a promise'; Object.keys = () => { throw 1; };"
           " const b = new Blob(['abcdef']);"
           " return [b.slice(-2).size, b.slice(1, 0).size, await b.text(),"
           " (await b.arrayBuffer()).byteLength, performance.timeOrigin > 0,"
           " new File([], 'f').lastModified > 0]; }") == R"([2,0,"abcdef",6,true,true])");
  // No streams: Blob.stream() says what to use instead.
  CHECK(ok("async () => { try { new Blob(['a']).stream(); } catch (e) { return String(e); } }") ==
        "\"TypeError: Blob.stream: there are no streams in the sandbox; read the Blob with "
        "text(), bytes() or arrayBuffer()\"");
}

TEST_CASE("code that tampers with the scripts' regular expressions changes no later answer",
          "[sandbox][globals]") {
  // whatwg-url.js and fetch.js keep their regular expressions for the whole call (in the execute
  // context they come compiled from the snapshot). Code can reach them through RegExp.prototype
  // and leave their lastIndex anywhere; the URL and Headers it builds next are as before, in
  // both contexts (with fetch: the one the snapshot made them in; without: made on first use).
  for (const FetchGlobal fetch : kBothContexts) {
    const bool with_fetch = fetch == FetchGlobal::present;
    // Headers is fetch.js's: the execute context with fetch only.
    const std::string build = std::string(
                                  "[new URL('/a%20b/../c?q=1+2', 'HTTP://Ex.test:80/x').href,"
                                  " new URLSearchParams('q=1+2%21').get('q')") +
                              (with_fetch ? ", new Headers([['x-a', ' b ']]).get('x-a')]" : "]");
    const std::string code =
        "async () => { const seen = new Set(); const exec = RegExp.prototype.exec;"
        " RegExp.prototype.exec = function (s) { seen.add(this); return exec.call(this, s); };"
        " const before = " +
        build +
        "; RegExp.prototype.exec = exec;"
        " for (const re of seen) re.lastIndex = 7;"
        " return [seen.size >= 4, before, " +
        build + "]; }";
    const channel::Outcome o = run_execute(code, fetch);
    INFO((with_fetch ? "with fetch: " : "without fetch: ") << o.error_message);
    REQUIRE(o.ok);
    const std::string once = with_fetch ? R"(["http://ex.test/c?q=1+2","1 2!","b"])"
                                        : R"(["http://ex.test/c?q=1+2","1 2!"])";
    CHECK(o.result_json == "[true," + once + "," + once + "]");
  }
}

TEST_CASE("nothing of the host is reachable", "[sandbox][escape]") {
  CHECK(ok("async () => ['process', 'require', 'WebAssembly', 'SharedArrayBuffer', 'Atomics', "
           "'fetch', 'module', 'global', 'Deno', 'Bun'].filter(n => n in globalThis)") == "[]");
  const char* code_generation[] = {
      "async () => this.constructor.constructor('return process')()",
      "async function () { return this.constructor.constructor('return process')(); }",
      "async () => console.log.constructor('return process')()",
      "async () => setTimeout.constructor('return 1')()",
      "async () => eval('1')",
      "async () => (0, eval)('1')",
      "async () => new Function('return 1')()",
      "async () => (async function(){}).constructor('return 1')()",
      "async () => (function*(){}).constructor('yield 1')().next()",
      ("async () => { try { null.x } catch (e) { return e.constructor.constructor('return 1')(); "
       "} }"),
  };
  for (const char* code : code_generation) {
    INFO(code);
    CHECK(failure(code).starts_with("runtime: EvalError: Code generation from strings disallowed"));
  }
  // Error.prepareStackTrace sees the code's frames and the strict-mode bootstrap's, whose
  // functions and receivers V8 withholds; no host frame exists.
  CHECK(ok("async () => { Error.prepareStackTrace = (e, frames) => frames.map(f => "
           "[f.getFileName(), typeof f.getThis(), typeof f.getFunction()].join()); let s; "
           "console.log({get x() { s = new Error('g').stack; return 1; }}); return s; }") ==
        R"(["code.js,object,function","bootstrap.js,undefined,undefined",)"
        R"("bootstrap.js,undefined,undefined","bootstrap.js,undefined,undefined",)"
        R"("code.js,undefined,undefined"])");
  // Errors thrown by host functions belong to the isolate.
  CHECK(ok("async () => { try { new TextDecoder('utf-8', {fatal: true}).decode(new "
           "Uint8Array([255])); } catch (e) { return [e instanceof Error, e.constructor === "
           "TypeError]; } }") == "[true,true]");
  // structuredClone's (V8's) error becomes the isolate's DOMException.
  CHECK(ok("async () => { try { structuredClone(() => 1); } catch (e) { "
           "return [e instanceof Error, e.constructor === DOMException]; } }") == "[true,true]");
  CHECK(ok("async () => { try { new TextDecoder().decode(1) } catch (e) { return e instanceof "
           "TypeError } }") == "true");
  // Host functions are not constructors and have no prototype to climb.
  CHECK(ok("async () => [typeof console.log.prototype, Object.getPrototypeOf(console.log) === "
           "Function.prototype]") == R"(["undefined",true])");
  // Proxy / Symbol.species tricks only ever meet isolate objects.
  CHECK(ok("async () => { class A extends Array { static get [Symbol.species]() { return "
           "function() { "
           "return new Proxy({}, {get: (t, k) => k}); }; } } const a = new A(1, 2, 3); const r = "
           "a.map(x => x); return typeof r; }") == R"("object")");
  CHECK(ok("async () => { const p = new Proxy({}, {get: (t, k) => k === 'then' ? undefined : () => "
           "'x'}); "
           "console.log(p); return structuredClone({a: 1}).a; }") == "1");
  CHECK(failure("async () => { WebAssembly.compile(new Uint8Array([0,97,115,109,1,0,0,0])) }") ==
        "runtime: ReferenceError: WebAssembly is not defined");
}

TEST_CASE("spec is fresh in every call", "[sandbox][search]") {
  const auto spec =
      document(R"({"openapi":"3.0.0","paths":{"/a":{},"/b":{}},"info":{"title":"T ü"}})");
  const config::Limits limits = test_limits();
  channel::Outcome first =
      run("async () => { const n = Object.keys(spec.paths).length; spec.paths = {}; "
          "Object.prototype.polluted = 1; globalThis.leak = 1; Array.prototype.push = null; "
          "JSON.stringify = () => 'hijacked'; return n; }",
          limits, channel::Tool::search, &spec);
  CHECK(first.result_json == "2");
  channel::Outcome second =
      run("async () => [Object.keys(spec.paths).length, ({}).polluted, typeof leak, "
          "typeof [].push, spec.info.title]",
          limits, channel::Tool::search, &spec);
  CHECK(second.result_json == R"([2,null,"undefined","function","T ü"])");
  const auto ascii = document(R"({"paths":{"/x":{}}})");
  CHECK(run("async () => Object.keys(spec.paths)", limits, channel::Tool::search, &ascii)
            .result_json == R"(["/x"])");
  CHECK(run("async () => typeof spec", limits, channel::Tool::execute, &ascii).result_json ==
        R"("undefined")");
}

TEST_CASE("calls on two threads run side by side", "[sandbox][threads]") {
  std::vector<std::string> results(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([t, &results] {
      std::string all;
      for (int i = 0; i < 20; ++i) {
        const std::string code =
            "async () => { globalThis.n = (globalThis.n || 0) + 1; "
            "await new Promise(r => setTimeout(r, 1)); return n * " +
            std::to_string(t + 1) + "; }";
        all += run(code).result_json;
      }
      results[static_cast<std::size_t>(t)] = all;
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(results[0] == std::string(20, '1'));
  CHECK(results[1] == std::string(20, '2'));
}

TEST_CASE("search: a $ref target met again in a result is written as {\"$ref\"}",
          "[sandbox][result]") {
  const auto spec = document(R"({"openapi":"3.0.0","paths":{"/a":{"get":{"responses":{"200":
    {"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/A"}}}}}}}},
    "components":{"schemas":{"A":{"type":"object","properties":{"x":{"$ref":"#/components/schemas/B"},
    "y":{"$ref":"#/components/schemas/B"}}},"B":{"type":"object","properties":{"s":{"type":"string"}}}}}})");
  channel::Outcome o =
      run("async () => spec.paths['/a'].get.responses['200'].content['application/json'].schema",
          test_limits(), channel::Tool::search, &spec);
  REQUIRE(o.ok);
  CHECK(
      o.result_json ==
      R"({"type":"object","properties":{"x":{"type":"object","properties":{"s":{"type":"string"}}},)"
      R"("y":{"$ref":"#/components/schemas/B"}}})");
  // Reading it in the code is unchanged: the same object twice.
  channel::Outcome same =
      run("async () => { const p = spec.components.schemas.A.properties; return p.x === p.y && "
          "p.y.type; }",
          test_limits(), channel::Tool::search, &spec);
  CHECK(same.result_json == R"("object")");
}

TEST_CASE("the region pool is on and hands a region out again zeroed", "[sandbox][memory]") {
  // Off, every isolate faults its heap's first pages in again (69 faults against 4 per hello
  // call): a node whose V8 allocator has another shape turns it off, and this says so.
  REQUIRE(region_pool_stats().on);
  (void)ok("async () => 1");
  (void)ok("async () => 2");
  CHECK(region_pool_stats().reused > 0);

  v8::PageAllocator* pages = region_pool_allocator();
  REQUIRE(pages != nullptr);
  constexpr std::size_t kRegion = std::size_t{256} << 10;
  void* first = pages->AllocatePages(nullptr, kRegion, kRegion, v8::PageAllocator::kReadWrite);
  REQUIRE(first != nullptr);
  std::memset(first, 0xA5, kRegion);
  REQUIRE(pages->FreePages(first, kRegion));
  // The pool is a stack: no other thread of this test allocates a region in between.
  void* again = pages->AllocatePages(nullptr, kRegion, kRegion, v8::PageAllocator::kReadWrite);
  REQUIRE(again != nullptr);
  CHECK(again == first);
  const auto* bytes = static_cast<const unsigned char*>(again);
  CHECK(std::all_of(bytes, bytes + kRegion, [](unsigned char b) { return b == 0; }));
  CHECK(pages->FreePages(again, kRegion));
}
