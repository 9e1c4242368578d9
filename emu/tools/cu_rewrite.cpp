// cu_rewrite IN OUT: turns a CUDA source (.cu/.cuh) into plain C++ for the CUDA emulator (emu/README.md),
// keeping every line where it was (a `#line 1 "IN"` header, no line added or removed), so compiler
// messages, debug info and the emulator's reports name the original file and line. Three rewrites:
//   kernel<A, B><<<grid, block, smem, stream>>>(args)  ->  ::moe_emu::launch(kernel<A, B>, grid, block, smem, stream)(args)
//   __shared__ [__align__(N)] T a[4], b;               ->  static ::moe_emu::SharedKey k_a; auto& a = ::moe_emu::shared_variable<T[4]>(&k_a, N); ...
//   extern __shared__ [__align__(N)] T s[];            ->  T* s = ::moe_emu::dynamic_shared<T>(N);
// and the first statement of every __global__ function body becomes MOE_EMU_KERNEL_ENTRY(bound), with
// the __launch_bounds__ value (0 when none): the kernel's coverage record and launch-bound check.
// Comments, string and character literals and preprocessor lines are left alone. Covered by every
// emulated build (a rewrite that breaks the syntax fails the compile) and tests/emu/checker_test.cpp
// (its deliberately buggy kernels go through the same rewrite).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Edit {
  size_t pos, len;
  std::string text;
};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Marks every byte of `s` that is code (not comment, literal or preprocessor line).
std::vector<bool> code_mask(const std::string& s) {
  std::vector<bool> code(s.size(), false);
  size_t i = 0;
  bool line_start = true;
  while (i < s.size()) {
    const char c = s[i];
    if (line_start && (c == ' ' || c == '\t')) { ++i; continue; }
    if (line_start && c == '#') {  // preprocessor line, with backslash continuations
      while (i < s.size() && !(s[i] == '\n' && s[i - 1] != '\\')) ++i;
      continue;
    }
    line_start = c == '\n';
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 2;
      continue;
    }
    if (c == '"' || c == '\'') {
      const bool raw = c == '"' && i > 0 && s[i - 1] == 'R';
      if (raw) {  // R"delim( ... )delim"
        const size_t open = s.find('(', i);
        const std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
        const size_t end = s.find(close, open);
        i = end == std::string::npos ? s.size() : end + close.size();
        continue;
      }
      ++i;
      while (i < s.size() && s[i] != c) i += s[i] == '\\' ? 2 : 1;
      ++i;
      continue;
    }
    code[i++] = true;
  }
  return code;
}

class Rewriter {
 public:
  Rewriter(std::string src, std::string path) : s_(std::move(src)), path_(std::move(path)), code_(code_mask(s_)) {}

  std::string run() {
    for (size_t i = 0; i < s_.size(); ++i) {
      if (!code_[i]) continue;
      if (s_.compare(i, 3, "<<<") == 0) i = launch(i);
      else if (word_at(i, "__shared__")) i = shared(i);
      else if (word_at(i, "__global__")) i = kernel(i);
    }
    std::stable_sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) { return a.pos < b.pos; });
    std::string out = "#line 1 \"" + path_ + "\"\n";
    size_t at = 0;
    for (const Edit& e : edits_) {
      out.append(s_, at, e.pos - at);
      out += e.text;
      at = e.pos + e.len;
    }
    out.append(s_, at, std::string::npos);
    return out;
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& what) const {
    const long line = 1 + std::count(s_.begin(), s_.begin() + static_cast<long>(pos), '\n');
    std::cerr << path_ << ":" << line << ": cu_rewrite: " << what << "\n";
    std::exit(1);
  }
  bool word_at(size_t i, const char* w) const {
    const size_t n = std::char_traits<char>::length(w);
    return s_.compare(i, n, w) == 0 && (i == 0 || !ident_char(s_[i - 1])) &&
           (i + n >= s_.size() || !ident_char(s_[i + n]));
  }
  size_t skip_space(size_t i) const {
    while (i < s_.size() && (std::isspace(static_cast<unsigned char>(s_[i])) || !code_[i])) ++i;
    return i;
  }
  /// Index just past the bracket matching the one at `i` ('(' or '[' or '{').
  size_t match(size_t i) const {
    const char open = s_[i], close = open == '(' ? ')' : open == '[' ? ']' : '}';
    int depth = 0;
    for (size_t j = i; j < s_.size(); ++j) {
      if (!code_[j]) continue;
      if (s_[j] == open) ++depth;
      else if (s_[j] == close && --depth == 0) return j + 1;
    }
    fail(i, std::string("unbalanced '") + open + "'");
  }
  /// The number of newlines in [a, b), as text (keeps the line count of a replaced span).
  std::string newlines(size_t a, size_t b) const {
    return std::string(static_cast<size_t>(std::count(s_.begin() + long(a), s_.begin() + long(b), '\n')), '\n');
  }

  // kernel<...><<<cfg>>>(args): the kernel expression is an (optionally qualified) name with optional
  // template arguments, ending right before <<<.
  size_t launch(size_t i) {
    long j = long(i) - 1;
    while (j >= 0 && std::isspace(static_cast<unsigned char>(s_[j]))) --j;
    if (j >= 0 && s_[j] == '>') {  // template arguments
      int depth = 0;
      for (; j >= 0; --j) {
        if (s_[j] == '>') ++depth;
        else if (s_[j] == '<' && --depth == 0) break;
      }
      --j;
    }
    while (j >= 0 && (ident_char(s_[j]) || s_[j] == ':')) --j;
    const size_t start = size_t(j + 1);
    if (start >= i || !(std::isalpha(static_cast<unsigned char>(s_[start])) || s_[start] == '_' || s_[start] == ':'))
      fail(i, "cannot find the kernel name before <<<");
    const size_t end = s_.find(">>>", i + 3);
    if (end == std::string::npos) fail(i, "<<< without >>>");
    edits_.push_back({start, 0, "::moe_emu::launch("});
    edits_.push_back({i, 3, ", "});
    edits_.push_back({end, 3, ")"});
    return end + 2;
  }

  // [extern] __shared__ [__align__(N)] TYPE declarators ;
  size_t shared(size_t i) {
    size_t begin = i;
    bool dynamic = false;
    {  // a preceding `extern`
      long j = long(i) - 1;
      while (j >= 0 && std::isspace(static_cast<unsigned char>(s_[j]))) --j;
      if (j >= 5 && word_at(size_t(j - 5), "extern")) begin = size_t(j - 5), dynamic = true;
    }
    size_t end = i;
    while (end < s_.size() && !(code_[end] && s_[end] == ';')) ++end;
    if (end >= s_.size()) fail(i, "__shared__ declaration without ';'");
    std::string body = s_.substr(i + 10, end - i - 10);
    std::string align = "0";
    const size_t a = body.find("__align__");
    if (a != std::string::npos) {
      const size_t open = body.find('(', a), close = body.find(')', open);
      align = body.substr(open + 1, close - open - 1);
      body.erase(a, close + 1 - a);
    }
    std::vector<std::string> parts;  // split at top-level commas
    int depth = 0;
    size_t from = 0;
    for (size_t k = 0; k < body.size(); ++k) {
      const char c = body[k];
      if (c == '(' || c == '[' || c == '<') ++depth;
      if (c == ')' || c == ']' || c == '>') --depth;
      if (c == ',' && depth == 0) parts.push_back(body.substr(from, k - from)), from = k + 1;
    }
    parts.push_back(body.substr(from));
    auto trim = [](std::string t) {
      const size_t b = t.find_first_not_of(" \t\n"), e = t.find_last_not_of(" \t\n");
      return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
    };
    // The first part is TYPE NAME DIMS: the name is the identifier before the first '[' (or the last one).
    std::string first = trim(parts[0]);
    size_t bracket = first.find('[');
    size_t name_end = bracket == std::string::npos ? first.size() : bracket;
    while (name_end > 0 && std::isspace(static_cast<unsigned char>(first[name_end - 1]))) --name_end;
    size_t name_begin = name_end;
    while (name_begin > 0 && ident_char(first[name_begin - 1])) --name_begin;
    const std::string type = trim(first.substr(0, name_begin));
    if (type.empty() || name_begin == name_end) fail(i, "cannot parse the __shared__ declaration");
    parts[0] = first.substr(name_begin);
    std::string out;
    for (const std::string& part : parts) {
      const std::string decl = trim(part);
      const size_t b = decl.find('[');
      const std::string name = trim(decl.substr(0, b)), dims = b == std::string::npos ? "" : decl.substr(b);
      if (dynamic) {
        if (dims != "[]") fail(i, "extern __shared__ must be an array of unknown size");
        out += type + "* " + name + " = ::moe_emu::dynamic_shared<" + type + ">(" + align + ");";
      } else {
        out += "static ::moe_emu::SharedKey moe_emu_key_" + name + "; auto& " + name + " = ::moe_emu::shared_variable<" +
               type + dims + ">(&moe_emu_key_" + name + ", " + align + ", \"" + name + "\");";
      }
      out += ' ';
    }
    edits_.push_back({begin, end + 1 - begin, out + newlines(begin, end)});
    return end;
  }

  // __global__ ... name(params) { -> insert the entry statement after '{'.
  size_t kernel(size_t i) {
    std::string bound = "0";
    size_t k = i + 10;
    while (true) {
      k = skip_space(k);
      if (k >= s_.size()) fail(i, "unterminated __global__ declaration");
      if (!ident_char(s_[k])) {
        if (s_[k] == '<') {  // template arguments in the return type
          int depth = 0;
          for (; k < s_.size(); ++k) {
            if (s_[k] == '<') ++depth;
            else if (s_[k] == '>' && --depth == 0) break;
          }
        }
        ++k;
        continue;
      }
      size_t e = k;
      while (e < s_.size() && ident_char(s_[e])) ++e;
      const std::string word = s_.substr(k, e - k);
      const size_t next = skip_space(e);
      if (next < s_.size() && s_[next] == '(') {
        const size_t close = match(next);
        if (word == "__launch_bounds__") {
          bound = s_.substr(next + 1, close - next - 2);
          const size_t comma = bound.find(',');  // (max threads[, min blocks])
          if (comma != std::string::npos) bound.resize(comma);
          k = close;
          continue;
        }
        if (word == "__align__" || word == "__attribute__" || word == "alignas" || word == "decltype") {
          k = close;
          continue;
        }
        size_t body = close;  // after the parameter list: qualifiers, then '{' or ';'
        while (body < s_.size() && !(code_[body] && (s_[body] == '{' || s_[body] == ';'))) ++body;
        if (body >= s_.size()) fail(i, "unterminated __global__ declaration");
        if (s_[body] == '{') edits_.push_back({body + 1, 0, " MOE_EMU_KERNEL_ENTRY(" + bound + ");"});
        return body;
      }
      k = e;
    }
  }

  std::string s_, path_;
  std::vector<bool> code_;
  std::vector<Edit> edits_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: cu_rewrite IN OUT\n  rewrites a CUDA source into plain C++ for the moe CUDA emulator\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "cu_rewrite: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string out = Rewriter(buf.str(), argv[1]).run();
  const std::string tmp = std::string(argv[2]) + ".tmp";
  {
    std::ofstream o(tmp, std::ios::binary);
    o << out;
    if (!o) {
      std::cerr << "cu_rewrite: cannot write " << tmp << "\n";
      return 1;
    }
  }
  return std::rename(tmp.c_str(), argv[2]) == 0 ? 0 : 1;
}
