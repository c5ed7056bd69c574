#include "supervisor/media/reads_ahead.h"

#include <stdexcept>
#include <utility>

#include "common/checked_file.h"
#include "supervisor/media/source_geometry.h"

namespace framemill {

std::vector<std::string> PacketCommand(const std::string& ffprobe, const SourceFile& source,
                                       int stream) {
  std::vector<std::string> argv = {ffprobe, "-v", "error"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.insert(argv.end(), {"-select_streams", std::to_string(stream), "-show_entries",
                           "packet=pts_time,flags", "-of", "csv=p=0", FdPath(source.fd)});
  return argv;
}

PacketScan::PacketScan(int stream, std::vector<std::string> argv, std::vector<int> inherit)
    : stream_(stream) {
  reader_ = std::thread(
      [this, argv = std::move(argv), inherit = std::move(inherit)] { Read(argv, inherit); });
}

PacketScan::~PacketScan() {
  cancel_.store(true);
  {
    MutexLock lock(&mu_);
    changed_.NotifyAll();  // a reader paused on a full queue looks again
  }
  reader_.join();
}

void PacketScan::Read(const std::vector<std::string>& argv, const std::vector<int>& inherit) {
  Result<CommandOutput> r = RunForEachLine(
      argv,
      [this](const std::string& line) {
        MutexLock lock(&mu_);
        while (waiting_.size() >= kMaxWaiting && !cancel_.load()) changed_.Wait(&mu_);
        if (cancel_.load()) throw std::runtime_error("cancelled");  // kills the scan
        waiting_.push_back(line);
        changed_.NotifyAll();
      },
      inherit, &cancel_);
  MutexLock lock(&mu_);
  result_ = std::move(r);
  ended_ = true;
  changed_.NotifyAll();
}

Result<CommandOutput> PacketScan::Each(const std::function<void(const std::string&)>& on_line) {
  std::deque<std::string> taken;
  while (true) {
    {
      MutexLock lock(&mu_);
      while (waiting_.empty() && !ended_) changed_.Wait(&mu_);
      if (waiting_.empty()) return std::move(*result_);  // ended, every line taken
      taken.swap(waiting_);
      changed_.NotifyAll();  // room again for a paused reader
    }
    for (const std::string& line : taken) on_line(line);
    taken.clear();
  }
}

ReadsAhead::ReadsAhead(const std::string& ffprobe, const SourceFile& source, bool packets,
                       bool read_fields) {
  if (packets) {
    scan.emplace(kStream, PacketCommand(ffprobe, source, kStream), std::vector<int>{source.fd});
  }
  if (read_fields) {
    fields = std::async(std::launch::async, [this, ffprobe, source] {
      VideoStreamInfo v;
      v.index = kStream;
      Status s = ReadFrameFieldOrder(ffprobe, source, &v, &stop);
      field_order = v.field_order;
      return s;
    });
  }
}

}  // namespace framemill
