#include "isolate/page_pool.h"

#include <sys/mman.h>

#include <libplatform/libplatform.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "isolate/isolate_runner.h"
#include "isolate/v8_platform.h"

using namespace codemode;
using namespace codemode::isolate;
using Permission = v8::PageAllocator::Permission;

namespace {

constexpr std::size_t kChunk = 256 * 1024;

// V8's own allocator, the one the pool stands in front of.
v8::PageAllocator& system_pages() {
  static std::unique_ptr<v8::Platform> platform = v8::platform::NewDefaultPlatform(1);
  return *platform->GetPageAllocator();
}

// The permissions /proc/self/maps gives the mapping that holds `address` ("rw-p", "---p").
std::string permissions_of(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  while (std::getline(maps, line)) {
    std::uintptr_t start = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) == 3 && start <= target &&
        target < end) {
      return perms;
    }
  }
  return "unmapped";
}

std::size_t resident_pages(void* address, std::size_t length) {
  std::vector<unsigned char> residency(length / 4096);
  REQUIRE(::mincore(address, length, residency.data()) == 0);
  std::size_t n = 0;
  for (unsigned char page : residency) n += page & 1;
  return n;
}

bool all_zero(const void* address, std::size_t length) {
  const auto* bytes = static_cast<const unsigned char*>(address);
  for (std::size_t i = 0; i < length; ++i) {
    if (bytes[i] != 0) return false;
  }
  return true;
}

// A writable data chunk from the pool, every byte of it `fill`, as V8 leaves one.
char* dirty_chunk(RecyclingPageAllocator& pool, int fill) {
  auto* chunk =
      static_cast<char*>(pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kReadWrite));
  REQUIRE(chunk != nullptr);
  std::memset(chunk, fill, kChunk);
  return chunk;
}

// The next request for a writable chunk gets `chunk` back, zero; then it is freed again.
void check_comes_back_zero(RecyclingPageAllocator& pool, const void* chunk) {
  void* again = pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kReadWrite);
  CHECK(again == chunk);
  CHECK(all_zero(again, kChunk));
  REQUIRE(pool.FreePages(again, kChunk));
}

}  // namespace

TEST_CASE("a freed chunk comes back zeroed, still resident, to the next request of its size",
          "[sandbox][page_pool]") {
  RecyclingPageAllocator pool(&system_pages(), 64 << 20, 8 << 20);
  void* first = pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kNoAccess);
  REQUIRE(first != nullptr);
  REQUIRE(reinterpret_cast<std::uintptr_t>(first) % kChunk == 0);
  REQUIRE(pool.SetPermissions(first, kChunk, Permission::kReadWrite));
  std::memset(first, 0xA5, kChunk / 2);  // half of it touched, as V8 leaves chunks
  REQUIRE(pool.FreePages(first, kChunk));

  // In the pool: zero, writable (a data chunk; V8 takes it again without a permission change),
  // and the touched half kept in memory.
  CHECK(permissions_of(first) == "rw-p");
  CHECK(resident_pages(first, kChunk) == kChunk / 2 / 4096);
  CHECK(all_zero(first, kChunk));  // (reading maps the rest: measure residency first)
  CHECK(pool.stats().resident_bytes == kChunk / 2);

  void* second = pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kReadWrite);
  CHECK(second == first);
  CHECK(permissions_of(second) == "rw-p");
  CHECK(all_zero(second, kChunk));
  const PagePoolStats stats = pool.stats();
  CHECK(stats.reused == 1);
  CHECK(stats.mapped == 1);
  CHECK(stats.pooled_bytes == 0);
  REQUIRE(pool.FreePages(second, kChunk));
}

TEST_CASE("a request the pool cannot meet goes to the system", "[sandbox][page_pool]") {
  RecyclingPageAllocator pool(&system_pages(), 64 << 20, 8 << 20);
  void* small = pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kReadWrite);
  REQUIRE(pool.FreePages(small, kChunk));
  // Another size, and an alignment the pooled region does not have.
  void* other = pool.AllocatePages(nullptr, 2 * kChunk, kChunk, Permission::kReadWrite);
  CHECK(other != small);
  void* aligned = pool.AllocatePages(nullptr, kChunk, 1 << 30, Permission::kReadWrite);
  CHECK(aligned != small);
  CHECK(reinterpret_cast<std::uintptr_t>(aligned) % (1 << 30) == 0);
  CHECK(pool.stats().reused == 0);
  CHECK(pool.stats().mapped == 3);
  pool.FreePages(other, 2 * kChunk);
  pool.FreePages(aligned, kChunk);
}

TEST_CASE("the pool stays within its budgets, oldest out first", "[sandbox][page_pool]") {
  // Room for the address space of three chunks and the resident pages of two.
  RecyclingPageAllocator pool(&system_pages(), 3 * kChunk, 2 * kChunk);
  void* regions[4];
  for (void*& region : regions) {
    region = pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kReadWrite);
    REQUIRE(region != nullptr);
    std::memset(region, 1, kChunk);
  }
  for (void* region : regions) REQUIRE(pool.FreePages(region, kChunk));
  PagePoolStats stats = pool.stats();
  CHECK(stats.resident_bytes <= 2 * kChunk);
  CHECK(stats.pooled_bytes <= 3 * kChunk);
  CHECK(stats.kept == 4);
  CHECK(stats.released == 2);
  CHECK(permissions_of(regions[0]) == "unmapped");  // the oldest went back to the system
  CHECK(permissions_of(regions[3]) == "rw-p");

  // A region with more resident pages than the whole budget is not kept at all.
  RecyclingPageAllocator tiny(&system_pages(), 64 << 20, kChunk / 2);
  void* big = tiny.AllocatePages(nullptr, kChunk, kChunk, Permission::kReadWrite);
  std::memset(big, 1, kChunk);
  REQUIRE(tiny.FreePages(big, kChunk));
  CHECK(tiny.stats().released == 1);
  CHECK(tiny.stats().pooled_bytes == 0);
}

TEST_CASE("code and big regions wait in the pool inaccessible, and are given as asked",
          "[sandbox][page_pool]") {
  RecyclingPageAllocator pool(&system_pages(), 256 << 20, 8 << 20);
  // A chunk that held code: never handed out writable again, even for kNoAccess.
  char* code =
      static_cast<char*>(pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kNoAccess));
  REQUIRE(pool.SetPermissions(code, kChunk, Permission::kReadWrite));
  std::memset(code, 0xCC, 4096);
  REQUIRE(pool.SetPermissions(code, 4096, Permission::kReadExecute));
  REQUIRE(pool.FreePages(code, kChunk));
  CHECK(permissions_of(code) == "---p");
  void* again = pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kNoAccess);
  CHECK(again == code);
  CHECK(permissions_of(again) == "---p");
  REQUIRE(pool.SetPermissions(again, kChunk, Permission::kReadWrite));
  CHECK(all_zero(again, kChunk));
  REQUIRE(pool.FreePages(again, kChunk));

  // A region as big as a code range: inaccessible in the pool, and when given for kNoAccess.
  constexpr std::size_t kBig = 64 << 20;
  char* big = static_cast<char*>(pool.AllocatePages(nullptr, kBig, kChunk, Permission::kReadWrite));
  std::memset(big + kBig / 2, 1, 4096);
  REQUIRE(pool.FreePages(big, kBig));
  CHECK(permissions_of(big) == "---p");
  void* reserved = pool.AllocatePages(nullptr, kBig, kChunk, Permission::kNoAccess);
  CHECK(reserved == big);
  CHECK(permissions_of(reserved) == "---p");
  REQUIRE(pool.SetPermissions(big + kBig / 2, 4096, Permission::kReadWrite));
  CHECK(all_zero(big + kBig / 2, 4096));
  REQUIRE(pool.FreePages(reserved, kBig));

  // A pooled data chunk asked for as kRead is given read-only.
  void* chunk = pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kReadWrite);
  REQUIRE(pool.FreePages(chunk, kChunk));
  CHECK(pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kRead) == chunk);
  CHECK(permissions_of(chunk) == "r--p");
  REQUIRE(pool.FreePages(chunk, kChunk));
}

TEST_CASE("of a big region, only the part that was ever accessible is scrubbed",
          "[sandbox][page_pool]") {
  RecyclingPageAllocator pool(&system_pages(), 256 << 20, 8 << 20);
  constexpr std::size_t kBig = 64 << 20;  // a code range: reserved whole, used at the start
  char* big = static_cast<char*>(pool.AllocatePages(nullptr, kBig, kChunk, Permission::kNoAccess));
  REQUIRE(big != nullptr);
  REQUIRE(pool.SetPermissions(big + (1 << 20), 64 * 1024, Permission::kReadWrite));
  std::memset(big + (1 << 20), 5, 64 * 1024);
  REQUIRE(pool.SetPermissions(big + (1 << 20), 64 * 1024, Permission::kNoAccess));
  std::size_t scrubbed = pool.stats().scrubbed_bytes;
  REQUIRE(pool.FreePages(big, kBig));
  CHECK(pool.stats().scrubbed_bytes - scrubbed == 64 * 1024);
  CHECK(permissions_of(big) == "---p");
  CHECK(permissions_of(big + (1 << 20)) == "---p");

  // The next user of the region: what the last one wrote is gone; the part it touched stays
  // on record, with what this one touches.
  char* again =
      static_cast<char*>(pool.AllocatePages(nullptr, kBig, kChunk, Permission::kNoAccess));
  REQUIRE(again == big);
  REQUIRE(pool.SetPermissions(again + (1 << 20), 64 * 1024, Permission::kReadWrite));
  CHECK(all_zero(again + (1 << 20), 64 * 1024));
  REQUIRE(pool.SetPermissions(again + (32 << 20), 4096, Permission::kReadExecute));
  REQUIRE(pool.SetPermissions(again + (32 << 20), 4096, Permission::kReadWrite));
  std::memset(again + (32 << 20), 6, 4096);
  scrubbed = pool.stats().scrubbed_bytes;
  REQUIRE(pool.FreePages(again, kBig));
  CHECK(pool.stats().scrubbed_bytes - scrubbed == (31 << 20) + 4096);

  char* third =
      static_cast<char*>(pool.AllocatePages(nullptr, kBig, kChunk, Permission::kReadWrite));
  REQUIRE(third == big);
  CHECK(all_zero(third + (1 << 20), 64 * 1024));
  CHECK(all_zero(third + (32 << 20), 4096));
  CHECK(resident_pages(third, kBig) <= 17);  // the zeroed pages; nothing else came in
  scrubbed = pool.stats().scrubbed_bytes;
  REQUIRE(pool.FreePages(third, kBig));
  CHECK(pool.stats().scrubbed_bytes - scrubbed == kBig);  // given writable: touched anywhere

  // A region that was never accessible is pooled without a look.
  char* reserved =
      static_cast<char*>(pool.AllocatePages(nullptr, 8 << 20, kChunk, Permission::kNoAccess));
  scrubbed = pool.stats().scrubbed_bytes;
  REQUIRE(pool.FreePages(reserved, 8 << 20));
  CHECK(pool.stats().scrubbed_bytes == scrubbed);
}

TEST_CASE("revoking or shrinking a writable data chunk costs nothing, in code it is real",
          "[sandbox][page_pool]") {
  RecyclingPageAllocator pool(&system_pages(), 64 << 20, 8 << 20);
  char* chunk = dirty_chunk(pool, 9);
  // V8 uncommitting a chunk, or a part of it, it is done with: nothing changes until the chunk
  // is freed, and it still comes back whole and zero.
  REQUIRE(pool.SetPermissions(chunk + 8 * 1024, kChunk - 8 * 1024, Permission::kNoAccess));
  REQUIRE(pool.SetPermissions(chunk, kChunk, Permission::kNoAccess));
  CHECK(permissions_of(chunk + kChunk - 4096) == "rw-p");
  REQUIRE(pool.ReleasePages(chunk, kChunk, 140 * 1024));
  CHECK(permissions_of(chunk + kChunk - 4096) == "rw-p");
  REQUIRE(pool.FreePages(chunk, 140 * 1024));
  CHECK(pool.stats().pooled_bytes == kChunk);
  check_comes_back_zero(pool, chunk);

  // Once a part of a chunk is read-only (or anything but writable), revoking is real.
  chunk = dirty_chunk(pool, 5);
  REQUIRE(pool.SetPermissions(chunk, 4096, Permission::kRead));
  REQUIRE(pool.SetPermissions(chunk + kChunk - 4096, 4096, Permission::kNoAccess));
  CHECK(permissions_of(chunk + kChunk - 4096) == "---p");
  REQUIRE(pool.FreePages(chunk, kChunk));
  check_comes_back_zero(pool, chunk);

  // Code: a guard page, and the tail V8 shrinks away, are out of reach for real.
  auto* code = static_cast<char*>(
      pool.AllocatePages(nullptr, kChunk, kChunk, Permission::kReadWriteExecute));
  REQUIRE(code != nullptr);
  std::memset(code, 0xCC, kChunk);
  REQUIRE(pool.SetPermissions(code + 4096, 4096, Permission::kNoAccess));
  CHECK(permissions_of(code + 4096) == "---p");
  REQUIRE(pool.ReleasePages(code, kChunk, 8 * 1024));
  CHECK(permissions_of(code + 8 * 1024) == "---p");  // the tail is out of reach, not unmapped
  CHECK(permissions_of(code) == "rwxp");
  REQUIRE(pool.FreePages(code, 8 * 1024));
  CHECK(pool.stats().pooled_bytes == kChunk);  // whole again
  check_comes_back_zero(pool, code);
}

TEST_CASE("decommitted pages read as zero when committed again, revoked ones stay resident",
          "[sandbox][page_pool]") {
  RecyclingPageAllocator pool(&system_pages(), 64 << 20, 8 << 20);
  char* region = dirty_chunk(pool, 7);
  REQUIRE(pool.DecommitPages(region, kChunk / 2));
  CHECK(permissions_of(region) == "---p");
  REQUIRE(pool.SetPermissions(region, kChunk / 2, Permission::kReadWrite));
  CHECK(all_zero(region, kChunk / 2));
  CHECK(region[kChunk / 2] == 7);

  // kNoAccess without a discard: the pages stay for the pool (V8's own allocator drops them).
  REQUIRE(pool.SetPermissions(region, kChunk, Permission::kNoAccess));
  CHECK(permissions_of(region) == "---p");
  CHECK(resident_pages(region, kChunk) == kChunk / 4096);
  REQUIRE(pool.FreePages(region, kChunk));
}

TEST_CASE("isolates take their pages from the pool", "[sandbox][page_pool]") {
  config::Limits limits;
  limits.cpu_ms = 1000;
  const PagePoolStats before = page_pool_stats();
  for (int i = 0; i < 3; ++i) {
    RunRequest request{channel::Tool::search, "async () => 1 + 1", &limits, nullptr, nullptr};
    REQUIRE(run_in_fresh_isolate(request).ok);
  }
  const PagePoolStats after = page_pool_stats();
  CHECK(after.reused > before.reused);
  CHECK(after.kept > before.kept);
}

TEST_CASE("after isolates that allocated, compiled and optimised, the pool holds only zeros",
          "[sandbox][page_pool]") {
  config::Limits limits;
  limits.cpu_ms = 5000;
  // Old and large objects, strings, optimised code (a hot loop), and ordinary short calls.
  const char* codes[] = {
      "async () => { const a = []; for (let i = 0; i < 2e5; i++) a.push({i, s: 'x' + i}); "
      "return a.length }",
      "async () => new Array(3e5).fill(7).length",
      "async () => { let s = 0; for (let i = 0; i < 5e6; i++) s = (s + i * 31) % 1000003; "
      "return s }",
      "async () => 1 + 1",
  };
  for (int round = 0; round < 3; ++round) {
    for (const char* code : codes) {
      RunRequest request{channel::Tool::search, code, &limits, nullptr, nullptr};
      REQUIRE(run_in_fresh_isolate(request).ok);
    }
  }
  const RecyclingPageAllocator::Audit audit = audit_page_pool();
  CHECK(audit.not_zero == 0);
  CHECK(audit.resident_untouched == 0);
  CHECK(page_pool_stats().pooled_bytes > 0);
}
