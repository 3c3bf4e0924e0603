#include "openapi/image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace codemode::openapi {
namespace {

using json = nlohmann::ordered_json;
using Node = DocumentImage::Node;
using Kind = DocumentImage::Kind;

constexpr char kMagic[8] = {'C', 'M', 'I', 'M', 'A', 'G', 'E', '1'};
constexpr std::size_t kHeaderBytes = 24;
constexpr std::uint32_t kHasRef = 1u << 8;
constexpr std::uint32_t kCircular = 1u << 9;
// As deep as RefIndex indexes; deeper nodes (only in documents no loader accepted) become null.
constexpr int kMaxDepth = 2000;

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::generic_category().message(errno);
}

// Writes the image into a byte buffer: children before their parents, each string and number
// once, ref targets patched in at the end (a target may come after the ref that names it).
class Writer {
 public:
  explicit Writer(const Document& document) : document_(document) {
    for (const auto& [occurrence, ref] : document.refs.entries()) {
      if (ref.target != nullptr) targets_.insert(ref.target);
    }
    bytes_.resize(kHeaderBytes);
  }

  std::string finish() {
    const Node root = emit(*document_.root, 0);
    for (const auto& [slot, target] : patches_) {
      const auto found = offsets_.find(target);
      put_at(slot, found == offsets_.end() ? 0 : found->second);
    }
    std::memcpy(bytes_.data(), kMagic, sizeof kMagic);
    put_at(8, root);
    put_at(12, 0);
    const std::uint64_t size = bytes_.size();
    std::memcpy(bytes_.data() + 16, &size, sizeof size);
    return std::move(bytes_);
  }

 private:
  Node emit(const json& node, int depth) {
    const Node offset = depth > kMaxDepth ? singleton(Kind::null) : emit_value(node, depth);
    if (targets_.count(&node) != 0) offsets_.emplace(&node, offset);
    return offset;
  }

  Node emit_value(const json& node, int depth) {
    switch (node.type()) {
      case json::value_t::boolean:
        return singleton(node.get<bool>() ? Kind::boolean_true : Kind::boolean_false);
      case json::value_t::number_integer:
        return number(static_cast<double>(node.get<std::int64_t>()));
      case json::value_t::number_unsigned:
        return number(static_cast<double>(node.get<std::uint64_t>()));
      case json::value_t::number_float:
        return number(node.get<double>());
      case json::value_t::string:
        return string(node.get_ref<const std::string&>());
      case json::value_t::array: {
        std::vector<Node> items;
        items.reserve(node.size());
        for (const auto& item : node) items.push_back(emit(item, depth + 1));
        const Node offset = start(static_cast<std::uint32_t>(Kind::array));
        put(static_cast<std::uint32_t>(items.size()));
        for (Node item : items) put(item);
        return offset;
      }
      case json::value_t::object:
        return object(node, depth);
      default:
        return singleton(Kind::null);
    }
  }

  Node object(const json& node, int depth) {
    std::vector<std::pair<Node, Node>> members;
    members.reserve(node.size());
    for (const auto& [name, value] : node.items()) {
      members.emplace_back(string(name), emit(value, depth + 1));
    }
    const RefIndex::Ref* ref = document_.refs.find(&node);
    std::uint32_t kind = static_cast<std::uint32_t>(Kind::object);
    if (ref != nullptr) kind |= kHasRef | (ref->circular ? kCircular : 0);
    const Node pointer = ref != nullptr ? string(ref->pointer) : 0;
    const Node offset = start(kind);
    put(static_cast<std::uint32_t>(members.size()));
    for (const auto& [key, value] : members) {
      put(key);
      put(value);
    }
    if (ref != nullptr) {
      if (ref->target != nullptr) patches_.emplace_back(bytes_.size(), ref->target);
      put(0);
      put(pointer);
    }
    return offset;
  }

  Node singleton(Kind kind) {
    Node& slot = singletons_[static_cast<std::size_t>(kind)];
    if (slot == 0) slot = start(static_cast<std::uint32_t>(kind));
    return slot;
  }

  Node number(double value) {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    auto [it, fresh] = numbers_.emplace(bits, 0);
    if (!fresh) return it->second;
    it->second = start(static_cast<std::uint32_t>(Kind::number));
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
    return it->second;
  }

  Node string(std::string_view text) {
    auto [it, fresh] = strings_.emplace(text, 0);
    if (!fresh) return it->second;
    it->second = start(static_cast<std::uint32_t>(Kind::string));
    put(static_cast<std::uint32_t>(text.size()));
    bytes_.append(text);
    bytes_.resize((bytes_.size() + 3) & ~std::size_t{3}, '\0');
    return it->second;
  }

  Node start(std::uint32_t kind_word) {
    const Node offset = static_cast<Node>(bytes_.size());
    put(kind_word);
    return offset;
  }
  void put(std::uint32_t value) { bytes_.append(reinterpret_cast<const char*>(&value), 4); }
  void put_at(std::size_t offset, std::uint32_t value) {
    std::memcpy(bytes_.data() + offset, &value, sizeof value);
  }

  const Document& document_;
  std::string bytes_;
  std::unordered_set<const json*> targets_;
  std::unordered_map<const json*, Node> offsets_;
  std::vector<std::pair<std::size_t, const json*>> patches_;
  std::unordered_map<std::string_view, Node> strings_;  // views into the document
  std::unordered_map<std::uint64_t, Node> numbers_;
  Node singletons_[3] = {0, 0, 0};
};

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

}  // namespace

std::variant<DocumentImage, std::string> DocumentImage::build(const Document& document) {
  std::string bytes = Writer(document).finish();
  if (bytes.size() > std::numeric_limits<Node>::max()) {
    return std::string("the document's image would be larger than 4 GiB");
  }
  const int fd = ::memfd_create("codemode-document", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return errno_text("memfd_create");
  // Written through the descriptor, never mapped writable, so the write seal can be set.
  if (!write_all(fd, bytes) ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    std::string error = errno_text("sealing the document image");
    ::close(fd);
    return error;
  }
  void* data = ::mmap(nullptr, bytes.size(), PROT_READ, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    std::string error = errno_text("mmap");
    ::close(fd);
    return error;
  }
  return DocumentImage(fd, static_cast<const unsigned char*>(data), bytes.size());
}

std::variant<DocumentImage, std::string> DocumentImage::map(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    std::string error = errno_text("fstat");
    ::close(fd);
    return error;
  }
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size < kHeaderBytes || size > std::numeric_limits<Node>::max()) {
    ::close(fd);
    return std::string("the document image has an impossible size");
  }
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) return errno_text("mmap");
  DocumentImage image(-1, static_cast<const unsigned char*>(data), size);
  std::uint64_t recorded = 0;
  std::memcpy(&recorded, image.data_ + 16, sizeof recorded);
  if (std::memcmp(image.data_, kMagic, sizeof kMagic) != 0 || recorded != size ||
      image.root_ < kHeaderBytes || image.root_ >= size) {
    return std::string("the document image is damaged (header)");
  }
  return image;
}

DocumentImage::DocumentImage(int fd, const unsigned char* data, std::size_t size)
    : fd_(fd), data_(data), size_(size) {
  root_ = word(8);
}

DocumentImage::DocumentImage(DocumentImage&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      root_(std::exchange(other.root_, 0)) {}

DocumentImage& DocumentImage::operator=(DocumentImage&& other) noexcept {
  DocumentImage gone(std::move(*this));
  std::swap(fd_, other.fd_);
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(root_, other.root_);
  return *this;
}

DocumentImage::~DocumentImage() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

std::uint32_t DocumentImage::word(std::size_t offset) const {
  if (offset > size_ || size_ - offset < 4) return 0;
  std::uint32_t value;
  std::memcpy(&value, data_ + offset, sizeof value);
  return value;
}

DocumentImage::Kind DocumentImage::kind(Node node) const {
  const std::uint32_t low = header(node) & 0xFF;
  return low <= static_cast<std::uint32_t>(Kind::object) ? static_cast<Kind>(low) : Kind::null;
}

double DocumentImage::number(Node node) const {
  if (kind(node) != Kind::number || size_ - node < 12) return 0;
  double value;
  std::memcpy(&value, data_ + node + 4, sizeof value);
  return value;
}

std::string_view DocumentImage::string(Node node) const {
  if (kind(node) != Kind::string) return {};
  const std::uint32_t length = word(std::size_t{node} + 4);
  const std::size_t start = std::size_t{node} + 8;
  if (start > size_ || size_ - start < length) return {};
  return {reinterpret_cast<const char*>(data_ + start), length};
}

std::uint32_t DocumentImage::count(Node node) const {
  const Kind k = kind(node);
  if (k != Kind::array && k != Kind::object) return 0;
  const std::uint32_t n = word(std::size_t{node} + 4);
  const std::size_t per = k == Kind::array ? 4 : 8;
  const std::size_t start = std::size_t{node} + 8;
  return start <= size_ && n <= (size_ - start) / per ? n : 0;
}

DocumentImage::Node DocumentImage::item(Node array, std::uint32_t index) const {
  if (kind(array) != Kind::array || index >= count(array)) return 0;
  return word(std::size_t{array} + 8 + std::size_t{index} * 4);
}

std::string_view DocumentImage::key(Node object, std::uint32_t index) const {
  if (kind(object) != Kind::object || index >= count(object)) return {};
  return string(word(std::size_t{object} + 8 + std::size_t{index} * 8));
}

DocumentImage::Node DocumentImage::value(Node object, std::uint32_t index) const {
  if (kind(object) != Kind::object || index >= count(object)) return 0;
  return word(std::size_t{object} + 12 + std::size_t{index} * 8);
}

std::optional<DocumentImage::Ref> DocumentImage::ref(Node object) const {
  const std::uint32_t head = header(object);
  if ((head & 0xFF) != static_cast<std::uint32_t>(Kind::object) || (head & kHasRef) == 0) {
    return std::nullopt;
  }
  const std::size_t tail = std::size_t{object} + 8 + std::size_t{count(object)} * 8;
  Ref ref;
  ref.target = word(tail);
  ref.circular = (head & kCircular) != 0;
  ref.pointer = string(word(tail + 4));
  return ref;
}

}  // namespace codemode::openapi
