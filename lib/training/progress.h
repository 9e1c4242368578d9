// Training logs: a text line every log_every updates (spdlog), the same figures as JSON lines in
// run_dir/metrics.jsonl ({"type":"train",...} / {"type":"valid",...}), and a one-line progress bar
// on stderr when it is a terminal. On --resume, metrics.jsonl keeps only the lines up to the
// resumed update, so the file reads like one uninterrupted run. Covered by tests/training/resume_test.cpp.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>

namespace moe {

struct TrainFigures {
  int64_t epoch = 0, update = 0;
  double loss = 0;  // label-smoothed training loss per target token, averaged over the log window
  double lr = 0, gnorm = 0, tokens_per_s = 0, loss_scale = 1;
  int64_t tokens = 0;   // target tokens in the window
  size_t mem_peak = 0;  // allocator peak bytes in the window
};

struct ValidFigures {
  int64_t epoch = 0, update = 0;
  double loss = 0;   // per target token, no label smoothing
  double bleu = -1;  // -1: not computed
  int64_t tokens = 0, sentences = 0;
  bool improved = false;
  double seconds = 0;
};

class MetricsLog {
 public:
  /// Opens run_dir/metrics.jsonl; keep_upto >= 0 keeps the existing lines whose "update" <= keep_upto
  /// (resume), keep_upto < 0 starts a new file.
  MetricsLog(const std::string& path, int64_t keep_upto);
  void train(const TrainFigures& f);
  void valid(const ValidFigures& f);
  const std::string& path() const { return path_; }

 private:
  void write(const std::string& line);
  std::string path_;
  std::ofstream out_;
};

/// "Ep. 1 Up. 100 loss 5.321 ppl 204.6 lr 2.5e-04 gnorm 1.23 tok/s 12345 mem 1.2 GiB" style text.
std::string format_train_line(const TrainFigures& f);
std::string format_valid_line(const ValidFigures& f);

/// A progress bar redrawn in place on stderr (only when stderr is a terminal).
class ProgressBar {
 public:
  explicit ProgressBar(int64_t total_updates);
  void show(int64_t update, double loss);
  /// Erases the bar before a log line is printed.
  void clear();

 private:
  bool active_;
  int64_t total_;
  bool drawn_ = false;
};

}  // namespace moe
