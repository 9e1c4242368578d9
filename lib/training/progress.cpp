// progress.h implementation: metrics.jsonl (truncated to the resumed update), text lines, progress bar.
// Covered by tests/training/resume_test.cpp.
#include "training/progress.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "common/error.h"
#include "common/json.h"
#include "tensor/allocator.h"

namespace moe {

MetricsLog::MetricsLog(const std::string& path, int64_t keep_upto) : path_(path) {
  std::vector<std::string> kept;
  if (keep_upto >= 0) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      try {
        const YAML::Node n = YAML::Load(line);  // JSON is YAML
        if (n["update"] && n["update"].as<int64_t>() <= keep_upto) kept.push_back(line);
      } catch (const YAML::Exception&) {
        // a line cut short by a crash: dropped
      }
    }
  }
  out_.open(path, std::ios::trunc);
  MOE_CHECK(out_.is_open(), "cannot write the metrics log ", path);
  for (const auto& line : kept) out_ << line << '\n';
  out_.flush();
}

void MetricsLog::write(const std::string& line) {
  out_ << line << '\n';
  out_.flush();
  MOE_CHECK(out_.good(), "moe-train: writing ", path_, " failed (a full disk or an I/O error)");
}

void MetricsLog::train(const TrainFigures& f) {
  write(JsonObject()
            .add("type", "train")
            .add("epoch", f.epoch)
            .add("update", f.update)
            .add("loss", f.loss)
            .add("ppl", std::exp(f.loss))
            .add("lr", f.lr)
            .add("gnorm", f.gnorm)
            .add("tokens", f.tokens)
            .add("tokens_per_s", f.tokens_per_s)
            .add("mem_peak", static_cast<int64_t>(f.mem_peak))
            .add("loss_scale", f.loss_scale)
            .str());
}

void MetricsLog::valid(const ValidFigures& f) {
  JsonObject j;
  j.add("type", "valid").add("epoch", f.epoch).add("update", f.update).add("loss", f.loss).add("ppl", std::exp(f.loss));
  if (f.bleu >= 0) j.add("bleu", f.bleu);
  j.add("tokens", f.tokens).add("sentences", f.sentences).add("improved", f.improved).add("seconds", f.seconds);
  write(j.str());
}

std::string format_train_line(const TrainFigures& f) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "Ep. %lld Up. %lld loss %.4f ppl %.2f lr %.3e gnorm %.3f tok/s %.0f mem %s",
                static_cast<long long>(f.epoch), static_cast<long long>(f.update), f.loss, std::exp(f.loss), f.lr,
                f.gnorm, f.tokens_per_s, format_bytes(f.mem_peak).c_str());
  std::string s = buf;
  if (f.loss_scale != 1) s += " scale " + std::to_string(static_cast<int64_t>(f.loss_scale));
  return s;
}

std::string format_valid_line(const ValidFigures& f) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "Ep. %lld Up. %lld valid loss %.4f ppl %.2f", static_cast<long long>(f.epoch),
                static_cast<long long>(f.update), f.loss, std::exp(f.loss));
  std::string s = buf;
  if (f.bleu >= 0) {
    std::snprintf(buf, sizeof buf, " bleu %.2f", f.bleu);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " (%lld sentences, %.1f s)%s", static_cast<long long>(f.sentences), f.seconds,
                f.improved ? " *" : "");
  return s + buf;
}

ProgressBar::ProgressBar(int64_t total_updates) : active_(::isatty(STDERR_FILENO) != 0), total_(total_updates) {}

void ProgressBar::show(int64_t update, double loss) {
  if (!active_) return;
  constexpr int kWidth = 30;
  char bar[kWidth + 4] = "";
  if (total_ > 0) {
    const int filled = static_cast<int>(kWidth * std::min<int64_t>(update, total_) / total_);
    bar[0] = '[';
    for (int i = 0; i < kWidth; ++i) bar[1 + i] = i < filled ? '#' : ' ';
    bar[kWidth + 1] = ']';
    bar[kWidth + 2] = ' ';
    bar[kWidth + 3] = '\0';
  }
  char buf[160];
  if (total_ > 0)
    std::snprintf(buf, sizeof buf, "\r%s%lld/%lld loss %.3f\033[K", bar, static_cast<long long>(update),
                  static_cast<long long>(total_), loss);
  else
    std::snprintf(buf, sizeof buf, "\rupdate %lld loss %.3f\033[K", static_cast<long long>(update), loss);
  std::cerr << buf << std::flush;
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!active_ || !drawn_) return;
  std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace moe
