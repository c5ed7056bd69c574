// What a media probe (media_probe.cpp) reads before it knows which stream is the video: the
// first stream's, the video's in almost every file, beside the probe that says which it is.
// Each read runs on a thread of its own and is cancelled when it was for the wrong stream, or
// when the probe ends without it. Saves a probe's length at each end of a job (0.1-0.3 s on a
// 2-core host).
//
// PacketScan: one stream's packet scan (PacketCommand: a line per packet), whose lines wait, in
// order, until Each() takes them, then pass as they come; at most kMaxWaiting wait (the scan then
// pauses: a long file's lines are not all kept). Each() is called at most once, from one thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <future>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/process/subprocess.h"

namespace framemill {

// `ffprobe -select_streams STREAM -show_entries packet=pts_time,flags -of csv=p=0` of `source`.
std::vector<std::string> PacketCommand(const std::string& ffprobe, const SourceFile& source,
                                       int stream);

class PacketScan {
 public:
  static constexpr size_t kMaxWaiting = 1 << 20;  // lines

  // Starts `argv` (RunForEachLine's, with `inherit`) for stream `stream`.
  PacketScan(int stream, std::vector<std::string> argv, std::vector<int> inherit);
  // A scan whose lines were not all taken is killed; the thread is joined.
  ~PacketScan();
  PacketScan(const PacketScan&) = delete;
  PacketScan& operator=(const PacketScan&) = delete;

  int stream() const { return stream_; }
  // Lines read and not taken yet.
  size_t Waiting() {
    MutexLock lock(&mu_);
    return waiting_.size();
  }

  // Hands every line, in order, to `on_line` (those read so far, then the rest as they come),
  // and returns the scan's result as RunForEachLine returns it.
  Result<CommandOutput> Each(const std::function<void(const std::string&)>& on_line);

 private:
  void Read(const std::vector<std::string>& argv, const std::vector<int>& inherit);

  const int stream_;
  Mutex mu_;
  CondVar changed_;  // a line came, the scan ended, a line was taken, or the scan is cancelled
  std::deque<std::string> waiting_ GUARDED_BY(mu_);
  bool ended_ GUARDED_BY(mu_) = false;
  std::optional<Result<CommandOutput>> result_ GUARDED_BY(mu_);
  std::atomic<bool> cancel_{false};
  std::thread reader_;
};

// The reads started ahead: stream 0's packet scan (with `packets`) and the field order of its
// first frames (with `fields`: source_geometry.h's ReadFrameFieldOrder). Destroying it stops what
// still runs and waits for it. `source`'s descriptor must outlive it.
struct ReadsAhead {
  ReadsAhead(const std::string& ffprobe, const SourceFile& source, bool packets, bool read_fields);
  ~ReadsAhead() { stop.store(true); }
  ReadsAhead(const ReadsAhead&) = delete;
  ReadsAhead& operator=(const ReadsAhead&) = delete;

  static constexpr int kStream = 0;
  std::optional<PacketScan> scan;
  std::atomic<bool> stop{false};
  std::string field_order;     // "tt" or "bb" when an interlaced frame was found, else empty
  std::future<Status> fields;  // ReadFrameFieldOrder's status (not valid when not started)
};

}  // namespace framemill
