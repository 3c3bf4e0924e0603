#include "isolate/globals_snapshot.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "base/check.h"
#include "isolate/host_functions.h"
#include "isolate/v8_platform.h"
#include "isolate/v8_text.h"

namespace codemode::embedded {
std::string_view sandbox_bootstrap_js();
std::string_view sandbox_whatwg_url_js();
std::string_view sandbox_tr46_js();
std::string_view sandbox_encodings_js();
std::string_view sandbox_sucrase_js();
std::string_view sandbox_web_js();
std::string_view sandbox_fetch_js();
std::string_view sandbox_warm_js();
}  // namespace codemode::embedded

namespace codemode::isolate::detail {

namespace {

// set_fetch_base's value; read once, while the snapshot is made.
std::mutex fetch_base_mutex;
std::string fetch_base;  // guarded by fetch_base_mutex

std::string current_fetch_base() {
  std::lock_guard lock(fetch_base_mutex);
  return fetch_base;
}

v8::Local<v8::Function> host_function(v8::Local<v8::Context> context,
                                      v8::FunctionCallback callback) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  return v8::FunctionTemplate::New(isolate, callback, v8::Local<v8::Value>(),
                                   v8::Local<v8::Signature>(), 0, v8::ConstructorBehavior::kThrow)
      ->GetFunction(context)
      .ToLocalChecked();
}

// Installs the sandbox's globals (js/bootstrap.js and, with `fetch`, js/fetch.js)
// into a context that no code has run in, and returns the `serialize` function the host keeps.
// Empty, with the exception in `try_catch`, only if the build's own scripts are broken.
v8::MaybeLocal<v8::Function> install_globals(v8::Local<v8::Context> context, FetchGlobal fetch) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  // Compiled whole, not lazily: the snapshot keeps every function's bytecode, so no call
  // compiles any of them again (an execute call with one fetch: 1.7 -> 0.6 ms in the isolate).
  constexpr auto kEager = v8::ScriptCompiler::kEagerCompile;
  v8::Local<v8::Object> global = context->Global();
  // Not Atomics: a context made from this snapshot gets SharedArrayBuffer installed again, which
  // adds to the Atomics object and fails V8's bootstrap when it is gone. Each call's context
  // deletes all three (isolate_runner.cpp).
  for (const char* name : {"WebAssembly", "SharedArrayBuffer"}) {
    if (global->Delete(context, v8_string(isolate, name)).IsNothing()) return {};
  }
  v8::Local<v8::Script> script;
  v8::Local<v8::Value> bootstrap, kept, serialize;
  if (!compile(context, embedded::sandbox_bootstrap_js(), "bootstrap.js", 0, kEager)
           .ToLocal(&script) ||
      !script->Run(context).ToLocal(&bootstrap) || !bootstrap->IsFunction()) {
    return {};
  }
  v8::Local<v8::Object> host = v8::Object::New(isolate);
  const std::pair<const char*, v8::FunctionCallback> functions[] = {
      {"log", host_log},
      {"setTimeout", host_set_timeout},
      {"clearTimeout", host_clear_timeout},
      {"queueMicrotask", host_queue_microtask},
      {"structuredClone", host_structured_clone},
      {"utf8Length", host_utf8_length},
      {"utf8Write", host_utf8_write},
      {"utf8Decode", host_utf8_decode},
      {"loadVendor", host_load_vendor},
      {"randomFill", host_random_fill},
      {"digest", host_digest},
  };
  for (const auto& [name, callback] : functions) {
    if (host->Set(context, v8_string(isolate, name), host_function(context, callback))
            .IsNothing()) {
      return {};
    }
  }
  v8::Local<v8::Value> args[] = {host, global};
  if (!bootstrap.As<v8::Function>()
           ->Call(context, v8::Undefined(isolate), 2, args)
           .ToLocal(&kept) ||
      !kept->IsObject() ||
      !kept.As<v8::Object>()->Get(context, v8_string(isolate, "serialize")).ToLocal(&serialize) ||
      !serialize->IsFunction()) {
    return {};
  }
  if (fetch == FetchGlobal::present) {
    v8::Local<v8::Value> factory, ignored, url_classes, web;
    if (!kept.As<v8::Object>()
             ->Get(context, v8_string(isolate, "urlClasses"))
             .ToLocal(&url_classes) ||
        !url_classes->IsObject() ||
        !kept.As<v8::Object>()->Get(context, v8_string(isolate, "webClasses")).ToLocal(&web) ||
        !web->IsObject()) {
      return {};
    }
    v8::Local<v8::Value> fetch_args[] = {global,
                                         host_function(context, host_fetch),
                                         host_function(context, host_read_body),
                                         url_classes,
                                         v8_string(isolate, current_fetch_base()),
                                         web,
                                         host_function(context, host_abort_fetch)};
    if (!compile(context, embedded::sandbox_fetch_js(), "fetch.js", 0, kEager).ToLocal(&script) ||
        !script->Run(context).ToLocal(&factory) || !factory->IsFunction() ||
        !factory.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate), static_cast<int>(std::size(fetch_args)),
                    fetch_args)
             .ToLocal(&ignored)) {
      return {};
    }
    v8::Local<v8::Value> warm;
    v8::Local<v8::Value> warm_args[] = {global};
    if (!compile(context, embedded::sandbox_warm_js(), "warm.js", 0).ToLocal(&script) ||
        !script->Run(context).ToLocal(&warm) || !warm->IsFunction() ||
        !warm.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate), 1, warm_args)
             .ToLocal(&ignored)) {
      return {};
    }
  }
  return serialize.As<v8::Function>();
}

}  // namespace

namespace {
// The snapshot once it is made; null while it is (its code caches run the vendor scripts,
// which must not wait for get()).
std::atomic<const GlobalsSnapshot*> made{nullptr};
std::atomic<std::size_t> rejected_caches{0};
// The isolate data slot mark_blob() writes (slot 0 is the call's CallState, host_functions.cpp).
constexpr std::uint32_t kBlobSlot = 1;

// sucrase.js's code caches, one per blob (V8 refuses a cache made in an isolate of the other),
// each from the process's first call of that blob that stripped types (keep_code_cache). A call
// holds its own reference while V8 reads the bytes.
std::mutex sucrase_cache_mutex;
std::shared_ptr<const std::vector<std::uint8_t>> sucrase_caches[2];  // guarded by the mutex

std::size_t blob_index(FetchGlobal fetch) { return fetch == FetchGlobal::present ? 1 : 0; }

FetchGlobal blob_of(v8::Isolate* isolate) {
  return isolate->GetData(kBlobSlot) != nullptr ? FetchGlobal::present : FetchGlobal::absent;
}
}  // namespace

void GlobalsSnapshot::mark_blob(v8::Isolate* isolate, FetchGlobal fetch) {
  // Any non-null pointer means "with fetch"; nothing reads through it.
  isolate->SetData(kBlobSlot, fetch == FetchGlobal::present ? isolate : nullptr);
}

std::shared_ptr<const std::vector<std::uint8_t>> kept_code_cache(Vendor which, FetchGlobal fetch) {
  if (which != Vendor::sucrase) return nullptr;
  std::lock_guard lock(sucrase_cache_mutex);
  return sucrase_caches[blob_index(fetch)];
}

void set_fetch_base(std::string base) {
  std::lock_guard lock(fetch_base_mutex);
  fetch_base = std::move(base);
}

const GlobalsSnapshot& GlobalsSnapshot::get() {
  static const GlobalsSnapshot* snapshot = [] {
    const GlobalsSnapshot* done = new GlobalsSnapshot;
    made.store(done, std::memory_order_release);
    return done;
  }();
  return *snapshot;
}

GlobalsSnapshot::GlobalsSnapshot() {
  // Two blobs, not two contexts in one: V8 keeps compiled functions with the isolate's part of a
  // snapshot, so with both contexts in one blob every search isolate deserialised fetch.js and
  // warm.js's functions too, and every execute isolate the search context. (V8 10.2 crashed on
  // isolates of two blobs in one process; 14.6 does not.)
  for (const FetchGlobal fetch : {FetchGlobal::absent, FetchGlobal::present}) {
    // The creator initialises an isolate registered with node's platform, and leaves it to us.
    v8::Isolate* isolate = allocate_isolate();
    std::unique_ptr<v8::ArrayBuffer::Allocator> allocator(
        v8::ArrayBuffer::Allocator::NewDefaultAllocator());
    v8::Isolate::CreateParams params;
    params.external_references = external_references();
    params.array_buffer_allocator = allocator.get();
    v8::StartupData made_blob{};
    {
      v8::SnapshotCreator creator(isolate, params);
      made_blob = make_blob(creator, fetch);
    }
    dispose_isolate(isolate);
    CODEMODE_CHECK(made_blob.data != nullptr && made_blob.raw_size > 0 && made_blob.IsValid(),
                   "V8 made the snapshot");
    blobs_[fetch == FetchGlobal::present ? 1 : 0] = made_blob;
  }
  // From here on every isolate of the process is made from these blobs, and keeps the hash seed
  // it was made with (random per process, as before) instead of drawing its own and rehashing
  // every table of the snapshot: 0.49 M of an isolate's 9.14 M instructions (callgrind,
  // isolate_bench; bench/README.md). V8 10.2 ran so from the command line; node 26 cannot: a
  // context made from scratch, as node's bootstrap and make_blob() make theirs, fails to
  // bootstrap without the rehash. Set before the code caches: V8 refuses a cache made under
  // other flags.
  v8::V8::SetFlagsFromString("--no-rehash-snapshot");
  make_code_caches(FetchGlobal::absent);
  make_code_caches(FetchGlobal::present);
}

v8::StartupData GlobalsSnapshot::make_blob(v8::SnapshotCreator& creator, FetchGlobal fetch) {
  v8::Isolate* isolate = creator.GetIsolate();
  {
    // The creator does not enter an isolate it did not allocate; the helpers find it current.
    v8::Isolate::Scope isolate_scope(isolate);
    v8::HandleScope handles(isolate);
    creator.SetDefaultContext(v8::Context::New(isolate));
    v8::Local<v8::Context> context = v8::Context::New(isolate);
    v8::Context::Scope scope(context);
    v8::TryCatch try_catch(isolate);
    v8::Local<v8::Function> serialize;
    if (!install_globals(context, fetch).ToLocal(&serialize)) {
      (void)std::fprintf(stderr, "codemode-mcp: the sandbox's scripts failed to set up: %s\n",
                         try_catch.HasCaught()
                             ? describe_exception(isolate, try_catch.Exception()).c_str()
                             : "no exception");
      CODEMODE_CHECK(false, "the build's own scripts set up a context");
    }
    creator.AddData(context, serialize);
    const std::size_t index = creator.AddContext(context);
    CODEMODE_CHECK(index == context_index(fetch), "V8 assigns context indexes in order");
  }
  return creator.CreateBlob(v8::SnapshotCreator::FunctionCodeHandling::kKeep);
}

namespace {

// What a call usually does with URLs: run once in an isolate of the new snapshot, so that the
// code cache holds these paths' functions compiled. No international name: tr46.js gets no
// cache (compiled from source it costs its rare call ~1 ms more, and its cache would cost
// every process start about as much as whatwg-url.js's); nor does encodings.js, which only a
// call decoding a legacy encoding (gbk, shift_jis, koi8-r, ...) compiles.
constexpr std::string_view kWarmUrls = R"js(
  const url = new URL('/products?limit=3&q=a%20b#top', 'http://127.0.0.1:8788/v1/');
  url.searchParams.append('x', 'y z');
  url.search = '?' + new URLSearchParams({limit: '3', cursor: 'a/b'});
  [url.href, url.origin, url.pathname, url.searchParams.get('q'), [...url.searchParams],
   URL.canParse('nope'), new URL('http://xn--mnchen-3ya.de/').host];
)js";

std::string_view vendor_source(Vendor which) {
  switch (which) {
    case Vendor::whatwg_url:
      return embedded::sandbox_whatwg_url_js();
    case Vendor::tr46:
      return embedded::sandbox_tr46_js();
    case Vendor::encodings:
      return embedded::sandbox_encodings_js();
    case Vendor::sucrase:
      return embedded::sandbox_sucrase_js();
    case Vendor::web:
      return embedded::sandbox_web_js();
  }
  CODEMODE_CHECK(false, "every Vendor has a source");
  return {};
}

const char* vendor_name(Vendor which) {
  switch (which) {
    case Vendor::whatwg_url:
      return "whatwg-url.js";
    case Vendor::tr46:
      return "tr46.js";
    case Vendor::encodings:
      return "encodings.js";
    case Vendor::sucrase:
      return "sucrase.js";
    case Vendor::web:
      return "web.js";
  }
  CODEMODE_CHECK(false, "every Vendor has a name");
  return "";
}

}  // namespace

void GlobalsSnapshot::make_code_caches(FetchGlobal fetch) {
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator(
      v8::ArrayBuffer::Allocator::NewDefaultAllocator());
  v8::Isolate::CreateParams params;
  params.snapshot_blob = blob(fetch);
  params.external_references = external_references();
  params.array_buffer_allocator = allocator.get();
  v8::Isolate* isolate = allocate_isolate();
  v8::Isolate::Initialize(isolate, params);
  {
    v8::Isolate::Scope isolate_scope(isolate);
    v8::HandleScope handles(isolate);
    v8::Local<v8::Context> context =
        v8::Context::FromSnapshot(isolate, context_index(fetch)).ToLocalChecked();
    v8::Context::Scope scope(context);
    v8::TryCatch try_catch(isolate);
    v8::Local<v8::Script> script;
    v8::Local<v8::Value> ignored;
    if (!compile(context, kWarmUrls, "warm-urls.js", 0).ToLocal(&script) ||
        !script->Run(context).ToLocal(&ignored)) {
      (void)std::fprintf(stderr, "codemode-mcp: the sandbox's URL scripts failed: %s\n",
                         try_catch.HasCaught()
                             ? describe_exception(isolate, try_catch.Exception()).c_str()
                             : "no exception");
      CODEMODE_CHECK(false, "the build's own URL scripts run");
    }
    // The same source and origin again: V8's compilation cache gives back the script just run,
    // with the functions it ran compiled, which the code cache then holds.
    if (compile(context, vendor_source(Vendor::whatwg_url), vendor_name(Vendor::whatwg_url), 0)
            .ToLocal(&script)) {
      const std::unique_ptr<v8::ScriptCompiler::CachedData> cache(
          v8::ScriptCompiler::CreateCodeCache(script->GetUnboundScript()));
      if (cache != nullptr && cache->length > 0) {
        whatwg_url_caches_[fetch == FetchGlobal::present ? 1 : 0].assign(
            cache->data, cache->data + cache->length);
      }
    }
  }
  dispose_isolate(isolate);
}

v8::MaybeLocal<v8::Value> run_vendor_script(v8::Local<v8::Context> context, Vendor which) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  const GlobalsSnapshot* snapshot = made.load(std::memory_order_acquire);
  static const std::vector<std::uint8_t> kNone;
  const FetchGlobal fetch = blob_of(isolate);
  const std::shared_ptr<const std::vector<std::uint8_t>> kept = kept_code_cache(which, fetch);
  const std::vector<std::uint8_t>& cache = kept != nullptr ? *kept
                                           : snapshot != nullptr
                                               ? snapshot->code_cache(which, fetch)
                                               : kNone;
  v8::ScriptOrigin origin(v8_string(isolate, vendor_name(which)), 0);
  v8::Local<v8::Script> script;
  if (cache.empty()) {
    v8::ScriptCompiler::Source source(v8_string(isolate, vendor_source(which)), origin);
    if (!v8::ScriptCompiler::Compile(context, &source).ToLocal(&script)) return {};
  } else {
    // Not owned: the bytes live as long as the process. A cache V8 rejects (it checks the
    // source and the flags) is ignored and the script compiled.
    v8::ScriptCompiler::Source source(
        v8_string(isolate, vendor_source(which)), origin,
        new v8::ScriptCompiler::CachedData(cache.data(), static_cast<int>(cache.size()),
                                           v8::ScriptCompiler::CachedData::BufferNotOwned));
    if (!v8::ScriptCompiler::Compile(context, &source, v8::ScriptCompiler::kConsumeCodeCache)
             .ToLocal(&script)) {
      return {};
    }
    if (source.GetCachedData()->rejected) rejected_caches.fetch_add(1, std::memory_order_relaxed);
  }
  return script->Run(context);
}

std::size_t code_cache_rejections() { return rejected_caches.load(std::memory_order_relaxed); }

void keep_code_cache(v8::Local<v8::Context> context, Vendor which) {
  CODEMODE_CHECK(which == Vendor::sucrase, "only sucrase.js's code cache is made by a call");
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  const FetchGlobal fetch = blob_of(isolate);
  if (kept_code_cache(which, fetch) != nullptr) return;
  v8::TryCatch ignored(isolate);
  // The same source and origin as run_vendor_script's: V8's compilation cache gives back the
  // script it ran, with the functions compiled since, which the code cache then holds.
  v8::ScriptCompiler::Source source(v8_string(isolate, vendor_source(which)),
                                    v8::ScriptOrigin(v8_string(isolate, vendor_name(which)), 0));
  v8::Local<v8::Script> script;
  if (!v8::ScriptCompiler::Compile(context, &source).ToLocal(&script)) return;
  const std::unique_ptr<v8::ScriptCompiler::CachedData> made_cache(
      v8::ScriptCompiler::CreateCodeCache(script->GetUnboundScript()));
  if (made_cache == nullptr || made_cache->length <= 0) return;
  auto bytes = std::make_shared<const std::vector<std::uint8_t>>(
      made_cache->data, made_cache->data + made_cache->length);
  std::lock_guard lock(sucrase_cache_mutex);
  if (sucrase_caches[blob_index(fetch)] == nullptr) {
    sucrase_caches[blob_index(fetch)] = std::move(bytes);
  }
}

}  // namespace codemode::isolate::detail
