#include "isolate/spec_view.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace codemode::isolate {

namespace {

using Kind = openapi::DocumentImage::Kind;

thread_local SpecView* active_view = nullptr;

v8::MaybeLocal<v8::String> v8_string(v8::Isolate* isolate, std::string_view text,
                                     v8::NewStringType type = v8::NewStringType::kNormal) {
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) return {};
  return v8::String::NewFromUtf8(isolate, text.data(), type, static_cast<int>(text.size()));
}

}  // namespace

SpecView::SpecView(v8::Isolate* isolate, const openapi::DocumentImage& image,
                   v8::Local<v8::Map> refs)
    : isolate_(isolate), image_(image), previous_(active_view) {
  if (!refs.IsEmpty()) refs_.Reset(isolate, refs);
  active_view = this;
}

SpecView::~SpecView() {
  for (auto& [node, value] : shared_) value.Reset();
  refs_.Reset();
  object_prototype_.Reset();
  active_view = previous_;
}

v8::MaybeLocal<v8::Value> SpecView::root(v8::Local<v8::Context> context) {
  return value_of(context, image_.root());
}

v8::Local<v8::Map> SpecView::refs() {
  if (refs_.IsEmpty()) refs_.Reset(isolate_, v8::Map::New(isolate_));
  return refs_.Get(isolate_);
}

bool SpecView::remember_ref(v8::Local<v8::Context> context, v8::Local<v8::Value> value,
                            std::string_view pointer) {
  v8::Local<v8::String> text;
  return v8_string(isolate_, pointer).ToLocal(&text) &&
         !refs()->Set(context, value, text).IsEmpty();
}

void SpecView::lazy_get(v8::Local<v8::Name>, const v8::PropertyCallbackInfo<v8::Value>& info) {
  SpecView* view = active_view;
  if (view == nullptr) return;  // no view on this thread: the property reads as undefined
  const auto node =
      static_cast<Node>(reinterpret_cast<std::uintptr_t>(info.Data().As<v8::External>()->Value()));
  v8::Local<v8::Value> value;
  if (view->value_of(info.GetIsolate()->GetCurrentContext(), node).ToLocal(&value)) {
    info.GetReturnValue().Set(value);
  }
}

// A node as code sees it: $refs followed (or marked circular), shared targets materialised once.
v8::MaybeLocal<v8::Value> SpecView::value_of(v8::Local<v8::Context> context, Node node) {
  Node key = node;
  Node source = node;
  Node siblings = 0;         // a $ref object whose other members override the target's
  std::string_view pointer;  // the $ref this node follows to a shared target, if any
  if (const auto ref = image_.ref(node)) {
    if (ref->circular) {
      v8::Local<v8::Object> marker = v8::Object::New(isolate_);
      v8::Local<v8::String> name, pointer;
      if (!v8_string(isolate_, "$circular", v8::NewStringType::kInternalized).ToLocal(&name) ||
          !v8_string(isolate_, ref->pointer).ToLocal(&pointer) ||
          marker->Set(context, name, pointer).IsNothing()) {
        return {};
      }
      return marker;
    }
    if (ref->target != 0) {
      source = ref->target;
      if (image_.count(node) > 1 && image_.kind(ref->target) == Kind::object) {
        siblings = node;
      } else {
        key = ref->target;
        pointer = ref->pointer;
      }
    }
  }
  const Kind kind = image_.kind(source);
  if (kind != Kind::array && kind != Kind::object) return plain_value(source);

  if (siblings == 0) {
    if (auto cached = shared_.find(key); cached != shared_.end()) {
      v8::Local<v8::Value> value = cached->second.Get(isolate_);
      if (!pointer.empty() && !remember_ref(context, value, pointer)) return {};
      return value;
    }
  }
  v8::Local<v8::Value> value;
  if (kind == Kind::array) {
    const std::uint32_t count = image_.count(source);
    std::vector<v8::Local<v8::Value>> items;
    items.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      v8::Local<v8::Value> element;
      if (!value_of(context, image_.item(source, i)).ToLocal(&element)) return {};
      items.push_back(element);
    }
    value = v8::Array::New(isolate_, items.data(), items.size());
  } else {
    const std::size_t members = image_.count(source) + (siblings != 0 ? image_.count(siblings) : 0);
    v8::Local<v8::Object> object = new_object(members);
    if (!add_lazy_members(context, object, source, /*skip_ref=*/false)) return {};
    if (siblings != 0 && !add_lazy_members(context, object, siblings, /*skip_ref=*/true)) {
      return {};
    }
    value = object;
  }
  if (siblings == 0) shared_.emplace(key, v8::Global<v8::Value>(isolate_, value));
  if (!pointer.empty() && !remember_ref(context, value, pointer)) return {};
  return value;
}

// V8 gives an object a new hidden class for every accessor added to it, copying the previous
// descriptors each time: 811 lazy properties (GitHub's paths) took 65 ms that way. An object
// created in dictionary mode takes them in 0.3 ms, at the price of slower property access from
// optimised code, which a short-lived search never reaches. Small objects keep the fast path.
v8::Local<v8::Object> SpecView::new_object(std::size_t members) {
  constexpr std::size_t kFastModeMembers = 8;
  if (members <= kFastModeMembers) return v8::Object::New(isolate_);
  if (object_prototype_.IsEmpty()) {
    object_prototype_.Reset(isolate_, v8::Object::New(isolate_)->GetPrototypeV2());
  }
  return v8::Object::New(isolate_, object_prototype_.Get(isolate_), nullptr, nullptr, 0);
}

bool SpecView::add_lazy_members(v8::Local<v8::Context> context, v8::Local<v8::Object> object,
                                Node node, bool skip_ref) {
  const std::uint32_t count = image_.count(node);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::string_view name = image_.key(node, i);
    if (skip_ref && name == "$ref") continue;
    v8::Local<v8::String> key;
    if (!v8_string(isolate_, name, v8::NewStringType::kInternalized).ToLocal(&key)) return false;
    // Redefining replaces a target's member with the sibling's (3.1 allows e.g. description).
    if (skip_ref && object->Delete(context, key).IsNothing()) return false;
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a node index in v8::External, never dereferenced
    auto* member = reinterpret_cast<void*>(static_cast<std::uintptr_t>(image_.value(node, i)));
    auto data = v8::External::New(isolate_, member);
    if (object->SetLazyDataProperty(context, key, &SpecView::lazy_get, data).IsNothing()) {
      return false;
    }
  }
  return true;
}

v8::MaybeLocal<v8::Value> SpecView::plain_value(Node node) {
  switch (image_.kind(node)) {
    case Kind::boolean_false:
      return v8::Boolean::New(isolate_, false).As<v8::Value>();
    case Kind::boolean_true:
      return v8::Boolean::New(isolate_, true).As<v8::Value>();
    case Kind::number:
      return v8::Number::New(isolate_, image_.number(node));
    case Kind::string: {
      v8::Local<v8::String> text;
      if (!v8_string(isolate_, image_.string(node)).ToLocal(&text)) return {};
      return text;
    }
    default:
      return v8::Null(isolate_).As<v8::Value>();
  }
}

}  // namespace codemode::isolate
