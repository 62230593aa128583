// progress.h — a progress bar on stderr for the `tessera` tool's long operations.
//
// Drawn only when both stdout and stderr are terminals and --quiet was not given, so
// scripts, pipes and logs never see it; redrawn at most ten times a second; the line is
// cleared when the operation ends.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace tool {

class Progress {
 public:
  // total: units of work (bytes when `bytes`, else items); 0 = unknown.
  Progress(std::string label, uint64_t total, bool bytes = true);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void set_total(uint64_t total) { total_ = total; }
  void set_label(std::string label) { label_ = std::move(label); }
  // Work done so far (absolute).
  void update(uint64_t done);
  void add(uint64_t n) { update(done_ + n); }
  void finish();
  static bool enabled();

 private:
  void draw(bool force);
  std::string label_;
  uint64_t total_ = 0, done_ = 0;
  bool bytes_ = true, on_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace tool
