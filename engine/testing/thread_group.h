// thread_group.h — a CommitGroup (commit.h) of threads, for tests: the members of an
// epoch commit (MPI ranks in the connector) run as threads of one process, each with its
// own Container (rank 0's, or a shadow) and Array objects.  Every collective is an
// exchange of one vector per member between two barriers.
//
// In turn (Shared::in_turn): the members run one at a time, in rank order, between two
// collectives — member 0's part of a step, then member 1's, and so on — so the file-system
// calls of an epoch come in the same order in every run (the power-loss and fault tests
// stop the machine at the k-th call; the visibility tests read between two renames).  A
// member runs its part before its first collective after begin() and its part after the
// last one before end() (Turn does both).
#pragma once
#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "engine/util/error.h"

namespace tessera {
namespace testutil {

class ThreadGroup final : public CommitGroup {
 public:
  struct Shared {
    explicit Shared(int n, bool in_turn = false) : n(n), in_turn(in_turn), slots(static_cast<size_t>(n)) {}
    int n;
    bool in_turn;
    std::mutex mu;
    std::condition_variable cv;
    int arrived = 0;
    int turn = 0;  // in turn: the member that may run
    uint64_t round = 0;
    std::vector<std::vector<uint64_t>> slots;
    std::string error;
  };
  ThreadGroup(Shared& s, int rank) : s_(s), rank_(rank) {}

  // In turn: waits for this member's first turn / gives the turn to the next member.
  void begin() {
    std::unique_lock<std::mutex> g(s_.mu);
    if (s_.in_turn) s_.cv.wait(g, [&] { return s_.turn == rank_; });
  }
  void end() {
    std::lock_guard<std::mutex> g(s_.mu);
    if (s_.in_turn) s_.turn = rank_ + 1;
    s_.cv.notify_all();
  }
  // begin() now, end() at the end of the scope (a member that returns early included).
  struct Turn {
    explicit Turn(ThreadGroup& g) : g(g) { g.begin(); }
    ~Turn() { g.end(); }
    ThreadGroup& g;
  };

  int rank() const override { return rank_; }
  int size() const override { return s_.n; }
  void agree(const std::function<void()>& f) override {
    std::string mine;
    try {
      f();
    } catch (const std::exception& e) {
      mine = e.what();
    }
    {
      std::lock_guard<std::mutex> g(s_.mu);
      if (!mine.empty() && s_.error.empty()) s_.error = "member " + std::to_string(rank_) + ": " + mine;
    }
    auto all = exchange({mine.empty() ? 0u : 1u});
    bool failed = false;
    for (auto& v : all) failed = failed || v[0];
    std::string why;
    {
      std::lock_guard<std::mutex> g(s_.mu);
      why = s_.error;
    }
    barrier();
    if (failed) throw_error(Errc::kIo, why);
  }
  void max(std::vector<uint64_t>& v) override {
    for (auto& o : exchange(v))
      for (size_t i = 0; i < v.size(); ++i) v[i] = std::max(v[i], o[i]);
  }
  void sum(std::vector<uint64_t>& v) override {
    auto all = exchange(v);
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = 0;
      for (auto& o : all) v[i] += o[i];
    }
  }
  std::vector<uint64_t> union_of(const std::vector<uint64_t>& mine) override {
    std::vector<uint64_t> out = gather(mine);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  std::vector<uint64_t> gather(const std::vector<uint64_t>& mine) override {
    std::vector<uint64_t> out;
    for (auto& o : exchange(mine)) out.insert(out.end(), o.begin(), o.end());
    return out;
  }
  bool node_leader() const override { return rank_ == 0; }
  bool node_any(bool mine) override {
    bool any = false;
    for (auto& o : exchange({mine ? 1u : 0u})) any = any || o[0];
    return any;
  }

 private:
  void barrier() {
    std::unique_lock<std::mutex> g(s_.mu);
    const uint64_t r = s_.round;
    if (s_.in_turn) s_.turn = rank_ + 1;  // the next member runs its part of this step
    if (++s_.arrived == s_.n) {
      s_.arrived = 0;
      ++s_.round;
      s_.turn = 0;
      s_.cv.notify_all();
    } else {
      s_.cv.notify_all();
      s_.cv.wait(g, [&] { return s_.round != r; });
    }
    if (s_.in_turn) s_.cv.wait(g, [&] { return s_.turn == rank_; });
  }
  std::vector<std::vector<uint64_t>> exchange(const std::vector<uint64_t>& mine) {
    barrier();  // everyone has read the previous exchange
    {
      std::lock_guard<std::mutex> g(s_.mu);
      s_.slots[static_cast<size_t>(rank_)] = mine;
    }
    barrier();
    std::lock_guard<std::mutex> g(s_.mu);
    return s_.slots;
  }
  Shared& s_;
  int rank_;
};

}  // namespace testutil
}  // namespace tessera
