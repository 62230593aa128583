// progress.cc — progress.h.
#include "tools/tessera/progress.h"

#include <unistd.h>

#include <cstdio>

#include "tools/tessera/command.h"
#include "tools/tessera/output.h"

namespace tool {

bool Progress::enabled() { return !global().quiet && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO); }

Progress::Progress(std::string label, uint64_t total, bool bytes)
    : label_(std::move(label)), total_(total), bytes_(bytes), on_(enabled()) {
  start_ = last_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { finish(); }

void Progress::update(uint64_t done) {
  done_ = done;
  if (on_) draw(false);
}

void Progress::draw(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::string line = "\r" + label_ + " ";
  if (total_ > 0) {
    const double f = done_ >= total_ ? 1.0 : static_cast<double>(done_) / static_cast<double>(total_);
    const int width = 30, fill = static_cast<int>(f * width);
    line += "[" + std::string(fill, '#') + std::string(width - fill, '.') + "] ";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3d%% ", static_cast<int>(f * 100));
    line += pct;
  }
  if (bytes_) {
    line += human_bytes(done_);
    if (total_) line += " / " + human_bytes(total_);
    if (secs > 0.5) line += "  " + human_bytes(static_cast<uint64_t>(static_cast<double>(done_) / secs)) + "/s";
  } else {
    line += std::to_string(done_);
    if (total_) line += " / " + std::to_string(total_);
  }
  if (total_ > 0 && done_ > 0 && done_ < total_ && secs > 1) {
    const double left = secs * static_cast<double>(total_ - done_) / static_cast<double>(done_);
    char eta[32];
    std::snprintf(eta, sizeof eta, "  ETA %ds", static_cast<int>(left + 0.5));
    line += eta;
  }
  line += "\033[K";  // clear the rest of the line
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (!on_ || !drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace tool
