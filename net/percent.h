// Percent-encoding (RFC 3986 §2.1): one writer of `%XX` and one reader, for every grammar that
// uses it. The grammars differ only in which bytes they leave as written, so an encoder takes
// that set as a value (`kUnreserved` for a query or form component, `kPrintable` for text a
// person reads); the decoders differ in what a bad escape means (kept as written, or refused)
// and in whether '+' is a space (form data) or a '+' (paths, pointers). Pure functions; any
// thread.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace codemode::net {

// The bytes an encoder leaves as written; every other byte becomes %XX with upper-case hex.
class ByteSet {
 public:
  constexpr ByteSet() = default;
  // Every byte in `bytes`.
  constexpr explicit ByteSet(std::string_view bytes) {
    for (const char c : bytes) keep_[static_cast<unsigned char>(c)] = true;
  }
  // Every byte in [first, last].
  static constexpr ByteSet range(unsigned char first, unsigned char last) {
    ByteSet set;
    for (unsigned c = first; c <= last; ++c) set.keep_[c] = true;
    return set;
  }
  constexpr ByteSet operator|(const ByteSet& other) const {
    ByteSet set = *this;
    for (std::size_t c = 0; c < 256; ++c) set.keep_[c] = keep_[c] || other.keep_[c];
    return set;
  }
  constexpr bool contains(char c) const { return keep_[static_cast<unsigned char>(c)]; }

 private:
  std::array<bool, 256> keep_{};
};

// RFC 3986 §2.3 unreserved: ALPHA DIGIT - . _ ~. What a query component or an
// application/x-www-form-urlencoded field leaves as written (space becomes %20, not '+').
inline constexpr ByteSet kUnreserved = ByteSet::range('A', 'Z') | ByteSet::range('a', 'z') |
                                       ByteSet::range('0', '9') | ByteSet("-._~");
// Printable ASCII without space (0x21-0x7e): text that goes into a log line or a JSON record.
inline constexpr ByteSet kPrintable = ByteSet::range(0x21, 0x7e);
// Printable ASCII with space (0x20-0x7e).
inline constexpr ByteSet kPrintableWithSpace = ByteSet::range(0x20, 0x7e);

// Appends `%XX` for `byte`, upper-case hex (RFC 3986 §2.1 says producers should).
void append_percent_encoded(std::string& out, unsigned char byte);

// `text` with every byte outside `keep` written as %XX.
std::string percent_encode(std::string_view text, const ByteSet& keep);

// What a '+' stands for: a space in form data and query strings as servers read them, itself
// in a path or a URI fragment.
enum class PlusMeans { plus, space };

// `text` with each %XX decoded; a '%' not followed by two hex digits stays as written (what
// servers and URL normalisation do with it).
std::string percent_decode(std::string_view text, PlusMeans plus);

// `text` with each %XX decoded; nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> percent_decode_strict(std::string_view text, PlusMeans plus);

}  // namespace codemode::net
