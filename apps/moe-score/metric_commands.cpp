// The `bleu` and `chrf` subcommands of moe-score: read the hypothesis (file or stdin) and one or
// more references (-r repeated or comma lists), check line counts, score, and print sacreBLEU's
// text format (score line + signature), the score only (-b), or a JSON object (--format json).
// Covered by tests/metrics/score_cli_test.cpp.
#include "moe-score/metric_commands.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <ostream>
#include <sstream>

#include "common/error.h"
#include "metrics/bleu.h"
#include "metrics/chrf.h"
#include "metrics/read_lines.h"

namespace moe::metrics {

using cli::SubcommandRunner;

namespace {

struct IoOptions {
  std::vector<std::string> refs;
  std::string input = "-";
  int width = 2;
  bool score_only = false;
  std::string format = "text";
  int num_refs = 1;  // > 1: one reference file with that many tab-separated references a line
};

void add_io_options(CLI::App& sub, IoOptions& io) {
  sub.add_option("-r,--ref", io.refs, "reference file(s); repeat -r or give a comma list")->required()->delimiter(',');
  sub.add_option("-i,--input", io.input, "hypothesis file ('-' = stdin)")->capture_default_str();
  sub.add_option("--num-refs", io.num_refs, "references per line of a single tab-separated -r file")
      ->capture_default_str();
  sub.add_option("-w,--width", io.width, "decimals printed for the score")->capture_default_str();
  sub.add_flag("-b,--score-only", io.score_only, "print only the score");
  sub.add_option("-f,--format", io.format, "output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

struct Corpus {
  std::vector<std::string> hyps;
  std::vector<std::vector<std::string>> refs;
};

Corpus load_corpus(const IoOptions& io, const char* metric) {
  Corpus c;
  c.hyps = read_lines(io.input);
  const std::string hyp_name = io.input == "-" ? "<stdin>" : io.input;
  if (io.num_refs > 1) {
    MOE_CHECK(io.refs.size() == 1, metric, ": --num-refs ", io.num_refs, " needs exactly one -r file, got ",
              io.refs.size());
    auto lines = read_lines(io.refs[0]);
    MOE_CHECK(lines.size() == c.hyps.size(), metric, ": line counts differ: hypotheses '", hyp_name, "' have ",
              c.hyps.size(), " lines, reference '", io.refs[0], "' has ", lines.size());
    c.refs.assign(io.num_refs, std::vector<std::string>(lines.size()));
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::size_t start = 0;
      for (int k = 0; k < io.num_refs; ++k) {  // str.split('\t', maxsplit=num_refs - 1)
        std::size_t tab = k + 1 < io.num_refs ? lines[i].find('\t', start) : std::string::npos;
        MOE_CHECK(k + 1 == io.num_refs || tab != std::string::npos, metric, ": line ", i + 1, " of '", io.refs[0],
                  "' has ", k + 1, " tab-separated fields, expected ", io.num_refs);
        c.refs[k][i] = lines[i].substr(start, tab == std::string::npos ? std::string::npos : tab - start);
        start = tab + 1;
      }
    }
    return c;
  }
  for (const auto& r : io.refs) {
    c.refs.push_back(read_lines(r));
    MOE_CHECK(c.refs.back().size() == c.hyps.size(), metric, ": line counts differ: hypotheses '", hyp_name, "' have ",
              c.hyps.size(), " lines, reference '", r, "' has ", c.refs.back().size());
  }
  return c;
}

std::string fixed(double v, int width) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", width, v);
  return buf;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

template <class T>
std::string json_list(const std::vector<T>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    if constexpr (std::is_floating_point_v<T>)
      s += num(v[i]);
    else
      s += std::to_string(v[i]);
  }
  return s + "]";
}

// JSON fields shared by both metrics: name, score, signature and the signature's key:value pairs.
std::string json_head(const std::string& name, const std::string& score, const std::string& sig) {
  std::ostringstream os;
  os << "{\n \"name\": \"" << name << "\",\n \"score\": " << score << ",\n \"signature\": \"" << sig << "\"";
  std::istringstream parts(sig);
  for (std::string kv; std::getline(parts, kv, '|');) {
    auto colon = kv.find(':');
    os << ",\n \"" << kv.substr(0, colon) << "\": \"" << kv.substr(colon + 1) << "\"";
  }
  return os.str();
}

}  // namespace

SubcommandRunner setup_bleu(CLI::App& sub) {
  auto io = std::make_shared<IoOptions>();
  auto opt = std::make_shared<BleuOptions>();
  auto smooth_value = std::make_shared<double>(-1.0);
  add_io_options(sub, *io);
  sub.add_option("-t,--tokenize", opt->tokenize, "tokenizer")
      ->check(CLI::IsMember(tokenizer_names()))
      ->capture_default_str();
  sub.add_flag("--lowercase,--lc", opt->lowercase, "lowercase hypotheses and references");
  sub.add_option("-s,--smooth-method", opt->smooth_method, "smoothing")
      ->check(CLI::IsMember({"exp", "floor", "add-k", "none"}))
      ->capture_default_str();
  sub.add_option("--smooth-value", *smooth_value, "value for floor (default 0.1) and add-k (default 1)");
  sub.add_option("--max-ngram-order", opt->max_ngram_order, "maximum n-gram order")->capture_default_str();
  sub.add_flag("-e,--effective-order", opt->effective_order, "average only over orders with n-grams");
  sub.add_flag("--compound-split", opt->compound_split,
               "WMT14 En-De convention: 'a-b' -> 'a ##AT##-##AT## b' after tokenization");
  return [io, opt, smooth_value](std::ostream& out, std::ostream&) {
    if (*smooth_value >= 0) opt->smooth_value = *smooth_value;
    Corpus c = load_corpus(*io, "bleu");
    Bleu bleu(*opt);
    BleuScore s = bleu.corpus_score(c.hyps, c.refs);
    std::string sig = bleu.signature();
    if (io->format == "json") {
      out << json_head("BLEU", fixed(s.score, io->width), sig) << ",\n \"verbose_score\": \"" << s.verbose()
          << "\",\n \"counts\": " << json_list(s.counts) << ",\n \"totals\": " << json_list(s.totals)
          << ",\n \"precisions\": " << json_list(s.precisions) << ",\n \"bp\": " << num(s.bp)
          << ",\n \"ratio\": " << num(s.ratio) << ",\n \"sys_len\": " << s.sys_len << ",\n \"ref_len\": " << s.ref_len
          << "\n}\n";
    } else if (io->score_only) {
      out << fixed(s.score, io->width) << "\n";
    } else {
      out << s.format(io->width) << "\n" << sig << "\n";
    }
    return 0;
  };
}

SubcommandRunner setup_chrf(CLI::App& sub) {
  auto io = std::make_shared<IoOptions>();
  auto opt = std::make_shared<ChrfOptions>();
  add_io_options(sub, *io);
  sub.add_option("--chrf-char-order,--cc", opt->char_order, "character n-gram order")->capture_default_str();
  sub.add_option("--chrf-word-order,--cw", opt->word_order, "word n-gram order (2: chrF++)")->capture_default_str();
  sub.add_option("--chrf-beta", opt->beta, "recall weight beta")->capture_default_str();
  sub.add_flag("--chrf-whitespace", opt->whitespace, "keep whitespace in character n-grams");
  sub.add_flag("--chrf-eps-smoothing", opt->eps_smoothing, "chrF++.py eps smoothing instead of effective order");
  sub.add_flag("--lowercase,--lc", opt->lowercase, "lowercase hypotheses and references");
  return [io, opt](std::ostream& out, std::ostream&) {
    Corpus c = load_corpus(*io, "chrf");
    Chrf chrf(*opt);
    ChrfScore s = chrf.corpus_score(c.hyps, c.refs);
    std::string sig = chrf.signature();
    if (io->format == "json") {
      out << json_head(s.name, fixed(s.score, io->width), sig) << ",\n \"stats\": " << json_list(s.stats) << "\n}\n";
    } else if (io->score_only) {
      out << fixed(s.score, io->width) << "\n";
    } else {
      out << s.format(io->width) << "\n" << sig << "\n";
    }
    return 0;
  };
}

}  // namespace moe::metrics
