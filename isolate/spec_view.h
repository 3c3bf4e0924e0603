// The `spec` global of a search isolate: a lazy, read-write JavaScript view of the shared,
// immutable API document.
//
// The document stays in the host, laid out once as an openapi::DocumentImage that every sandbox
// process maps read-only. An isolate starts with only
// the root object; each property is a V8 lazy data property that, on first access, materialises
// its value one level deep and becomes an ordinary data property. A call therefore pays for the
// parts of the spec it touches, not for the spec's size, and it sees plain objects: keys,
// enumeration, JSON.stringify, mutation all behave as usual, and mutation stays in the isolate,
// which is thrown away after the call. $refs appear resolved (one shared object per target
// within a call) or, where the document is cyclic, as {"$circular": "<ref>"} (see RefIndex).
//
// Threading: a SpecView lives on one worker thread, inside one isolate's lifetime, and at most
// one is active per thread (the getters find it through a thread-local pointer). Destroy it
// before disposing the isolate.
#pragma once

#include <unordered_map>

#include <v8.h>

#include "openapi/image.h"

namespace codemode::isolate {

class SpecView {
 public:
  // `refs`: where the $ref targets a call meets are noted (refs()).
  SpecView(v8::Isolate* isolate, const openapi::DocumentImage& image, v8::Local<v8::Map> refs = {});
  ~SpecView();
  SpecView(const SpecView&) = delete;
  SpecView& operator=(const SpecView&) = delete;

  // The root object, to be installed as the `spec` global. Empty if V8 threw (e.g. terminated).
  v8::MaybeLocal<v8::Value> root(v8::Local<v8::Context> context);

  // The $ref targets this call has met, object -> its pointer ("#/components/schemas/x"), for
  // the result's serialiser (a shared object met again is written as {"$ref": pointer}) and
  // spec.describe: the map given to the constructor (js/bootstrap.js keeps it in its closure,
  // never reachable from the code), or one of its own.
  v8::Local<v8::Map> refs();

 private:
  static void lazy_get(v8::Local<v8::Name> name, const v8::PropertyCallbackInfo<v8::Value>& info);
  using Node = openapi::DocumentImage::Node;
  v8::MaybeLocal<v8::Value> value_of(v8::Local<v8::Context> context, Node node);
  v8::MaybeLocal<v8::Value> plain_value(Node node);
  v8::Local<v8::Object> new_object(std::size_t members);
  bool add_lazy_members(v8::Local<v8::Context> context, v8::Local<v8::Object> object, Node node,
                        bool skip_ref);

  v8::Isolate* isolate_;
  const openapi::DocumentImage& image_;
  SpecView* previous_;
  bool remember_ref(v8::Local<v8::Context> context, v8::Local<v8::Value> value,
                    std::string_view pointer);
  std::unordered_map<Node, v8::Global<v8::Value>> shared_;
  v8::Global<v8::Map> refs_;
  v8::Global<v8::Value> object_prototype_;  // this context's Object.prototype, once needed
};

}  // namespace codemode::isolate
