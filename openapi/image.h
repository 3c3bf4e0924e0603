// An API document laid out as one immutable block of bytes that any process can read in place.
//
// The daemon parses the document once. Every sandbox process used to receive it as MessagePack
// and parse it again into its own tree (GitHub's REST description: 0.7 s of CPU and ~45 MB per
// process). A DocumentImage is built once, in a memfd that is then sealed against any change;
// sandbox processes map it read-only and read nodes where they lie, so the pages are shared, a
// process touches only what its calls read, and starting a process costs no parse at all.
//
// Layout (little-endian, every node 4-byte aligned, a node is its offset from the start):
//   header   "CMIMAGE1", u32 root, u32 0, u64 total size
//   null, false, true             u32 kind
//   number                        u32 kind, f64 (8 bytes, read unaligned)
//   string                        u32 kind, u32 length, bytes, padding
//   array                         u32 kind, u32 count, count x u32 item
//   object                        u32 kind, u32 count, count x (u32 key string, u32 value)
//   object with a $ref            as object, then u32 target (0: none), u32 the $ref string
// The kind word holds the kind in its low byte, bit 8 for "has a $ref", bit 9 for "circular".
// Refs are those RefIndex resolved: a target node, or circular, or neither (kept as written).
// Strings and numbers are stored once however often they occur.
//
// Trust: built by the daemon from a checked Document; a mapped image is checked for its header
// and size, and every accessor stays inside the image (an offset out of range reads as null),
// so even a damaged image cannot make a reader touch memory outside it.
//
// Threads: immutable once built; any thread may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "openapi/document.h"

namespace codemode::openapi {

class DocumentImage {
 public:
  enum class Kind : std::uint8_t {
    null,
    boolean_false,
    boolean_true,
    number,
    string,
    array,
    object
  };
  using Node = std::uint32_t;  // an offset into the image; 0 (the header) is never a node

  struct Ref {
    Node target = 0;  // 0: the ref names nothing resolvable and is shown as written
    bool circular = false;
    std::string_view pointer;  // the $ref text
  };

  // Lays `document` out in a sealed memfd. The error says which system call failed.
  static std::variant<DocumentImage, std::string> build(const Document& document);
  // Maps an image that build() made, from its memfd; takes `fd` over (closes it).
  static std::variant<DocumentImage, std::string> map(int fd);

  DocumentImage(DocumentImage&& other) noexcept;
  DocumentImage& operator=(DocumentImage&& other) noexcept;
  ~DocumentImage();
  DocumentImage(const DocumentImage&) = delete;
  DocumentImage& operator=(const DocumentImage&) = delete;

  // The sealed memfd, for a child process to map (-1 for an image that map() made).
  int fd() const { return fd_; }
  std::size_t size() const { return size_; }

  Node root() const { return root_; }
  Kind kind(Node node) const;
  double number(Node node) const;            // 0 unless a number
  std::string_view string(Node node) const;  // empty unless a string
  std::uint32_t count(Node node) const;      // items of an array, members of an object; else 0
  Node item(Node array, std::uint32_t index) const;
  std::string_view key(Node object, std::uint32_t index) const;
  Node value(Node object, std::uint32_t index) const;
  // The ref an object stands for: set for every object with a string "$ref" member that the
  // RefIndex indexed.
  std::optional<Ref> ref(Node object) const;

 private:
  DocumentImage(int fd, const unsigned char* data, std::size_t size);
  std::uint32_t word(std::size_t offset) const;  // 0 when out of range
  std::uint32_t header(Node node) const { return node == 0 ? 0 : word(node); }

  int fd_ = -1;
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  Node root_ = 0;
};

}  // namespace codemode::openapi
