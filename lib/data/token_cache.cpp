// Token cache: encode once, mmap afterwards. Writes go to a temporary file renamed into place, so a
// crashed or concurrent writer never leaves a half-written cache; a damaged one (offsets or ids out of
// range) is encoded again. Covered by tests/data/token_cache_test.cpp and tests/fuzz/lm_text.cpp.
#include "data/token_cache.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "data/vocab.h"

namespace fs = std::filesystem;

namespace moe::data {

namespace {
constexpr char kMagic[8] = {'M', 'O', 'E', 'T', 'O', 'K', '0', '2'};
struct Header {
  char magic[8];
  uint64_t text_size, text_mtime_ns, vocab_hash, flags;  // flags: 1 = invalid UTF-8 lines were blanked
  int64_t lines, tokens;
};

struct Mapping {
  void* addr = nullptr;
  size_t len = 0;
  ~Mapping() {
    if (addr) munmap(addr, len);
  }
};

Header key_of(const std::string& text_path, const std::string& vocab_path, const ReadOptions& opts) {
  struct stat st {};
  MOE_CHECK(::stat(text_path.c_str(), &st) == 0, "token cache: cannot stat '", text_path, "'");
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.text_size = static_cast<uint64_t>(st.st_size);
  h.text_mtime_ns =
      static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + static_cast<uint64_t>(st.st_mtim.tv_nsec);
  h.vocab_hash = hash_file(vocab_path);
  h.flags = opts.skip_invalid_utf8 ? 1 : 0;
  return h;
}

/// A mapped cache whose key matched can still be damaged (a disk error, a foreign file): its offsets
/// must rise from 0 to `tokens` and its ids lie in [0, vocab_size), or reading it would go out of bounds.
/// One pass over the ids, about 0.1 s per 100M tokens.
bool well_formed(const int64_t* offsets, const int32_t* ids, int64_t lines, int64_t tokens, int32_t vocab_size) {
  if (offsets[0] != 0 || offsets[lines] != tokens) return false;
  for (int64_t i = 0; i < lines; ++i)
    if (offsets[i + 1] < offsets[i]) return false;
  for (int64_t i = 0; i < tokens; ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size) return false;
  return true;
}
}  // namespace

EncodedCorpus::EncodedCorpus(std::vector<int32_t> ids, std::vector<int64_t> offsets) {
  MOE_CHECK(!offsets.empty() && offsets.front() == 0 && offsets.back() == static_cast<int64_t>(ids.size()),
            "EncodedCorpus: offsets (", offsets.size(), " entries) do not span the ", ids.size(), " ids");
  auto holder =
      std::make_shared<std::pair<std::vector<int32_t>, std::vector<int64_t>>>(std::move(ids), std::move(offsets));
  ids_ = holder->first.data();
  offsets_ = holder->second.data();
  lines_ = static_cast<int64_t>(holder->second.size()) - 1;
  owner_ = holder;
}

EncodedCorpus EncodedCorpus::encode(const std::vector<std::string>& lines, const Vocab& vocab) {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};
  offsets.reserve(lines.size() + 1);
  for (const auto& l : lines) {
    const auto e = vocab.encode(l);
    ids.insert(ids.end(), e.begin(), e.end());
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  return EncodedCorpus(std::move(ids), std::move(offsets));
}

std::string cache_path(const std::string& text_path, const std::string& vocab_path, const std::string& cache_dir) {
  const std::string name =
      fs::path(text_path).filename().string() + "." + fs::path(vocab_path).filename().string() + ".ids";
  if (cache_dir.empty()) return text_path + "." + fs::path(vocab_path).filename().string() + ".ids";
  return (fs::path(cache_dir) / name).string();
}

EncodedCorpus load_or_build_cache(const std::string& text_path, const Vocab& vocab, const std::string& vocab_path,
                                  const std::string& cache_dir, const ReadOptions& opts, bool* rebuilt) {
  const Header key = key_of(text_path, vocab_path, opts);
  const std::string path = cache_path(text_path, vocab_path, cache_dir);
  // 1. A matching cache: map it.
  if (int fd = ::open(path.c_str(), O_RDONLY); fd >= 0) {
    struct stat st {};
    Header h{};
    const bool ok = ::fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof h) &&
                    ::pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) &&
                    std::memcmp(h.magic, kMagic, 8) == 0 && h.text_size == key.text_size &&
                    h.text_mtime_ns == key.text_mtime_ns && h.vocab_hash == key.vocab_hash && h.flags == key.flags &&
                    h.lines >= 0 && h.tokens >= 0 && h.lines < st.st_size / 8 &&
                    h.tokens < st.st_size / 4 &&  // no overflow below
                    static_cast<uint64_t>(st.st_size) == sizeof h + 8ull * (h.lines + 1) + 4ull * h.tokens;
    if (ok) {
      auto m = std::make_shared<Mapping>();
      m->len = static_cast<size_t>(st.st_size);
      m->addr = ::mmap(nullptr, m->len, PROT_READ, MAP_PRIVATE, fd, 0);
      ::close(fd);
      MOE_CHECK(m->addr != MAP_FAILED, "token cache: cannot mmap '", path, "': ", std::strerror(errno));
      EncodedCorpus c;
      const char* base = static_cast<const char*>(m->addr);
      c.offsets_ = reinterpret_cast<const int64_t*>(base + sizeof h);
      c.ids_ = reinterpret_cast<const int32_t*>(base + sizeof h + 8 * (h.lines + 1));
      c.lines_ = h.lines;
      c.mapped_ = true;
      c.owner_ = m;
      if (well_formed(c.offsets_, c.ids_, h.lines, h.tokens, vocab.size())) {
        if (rebuilt) *rebuilt = false;
        spdlog::info("token cache: mapped {} ({} lines, {} tokens)", path, h.lines, h.tokens);
        return c;
      }
      spdlog::warn("token cache: {} is corrupt (offsets or ids out of range); encoding the text again", path);
    } else {
      ::close(fd);
    }
  }
  // 2. Encode and write the cache (best effort: a read-only folder only costs the next start).
  EncodedCorpus c = EncodedCorpus::encode(read_lines(text_path, opts), vocab);
  if (rebuilt) *rebuilt = true;
  Header h = key;
  h.lines = c.size();
  h.tokens = c.tokens();
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (out) {
      out.write(reinterpret_cast<const char*>(&h), sizeof h);
      out.write(reinterpret_cast<const char*>(c.offsets_), static_cast<std::streamsize>(8 * (h.lines + 1)));
      out.write(reinterpret_cast<const char*>(c.ids_), static_cast<std::streamsize>(4 * h.tokens));
    }
    if (!out) {
      spdlog::warn("token cache: cannot write {} (the text is re-encoded on every start; set a cache folder)", path);
      std::error_code ec;
      fs::remove(tmp, ec);
      return c;
    }
  }
  fs::rename(tmp, path);
  spdlog::info("token cache: wrote {} ({} lines, {} tokens)", path, h.lines, h.tokens);
  return c;
}

}  // namespace moe::data
