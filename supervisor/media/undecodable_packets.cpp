#include "supervisor/media/undecodable_packets.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/checked_file.h"
#include "supervisor/process/program_answers.h"

namespace framemill {
namespace {

// What ffprobe printed for an interval of the stream: the times of its packets (decode order)
// and of the pictures decoded from them.
struct IntervalDecode {
  std::vector<std::string> packets;
  std::set<std::string> shown;
  PacketDecode figures;  // first_shown, last_shown, any_shown
};

// Decodes the packets of `stream` that `interval` (ffprobe -read_intervals; "" = every packet)
// selects; ffprobe flushes the decoder at the interval's end, so every picture those packets hold
// comes out.
Result<IntervalDecode> DecodeInterval(const std::string& ffprobe, const SourceFile& source,
                                      int stream, const std::string& interval) {
  std::vector<std::string> argv = {ffprobe, "-v", "error"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.insert(argv.end(), {"-select_streams", std::to_string(stream)});
  if (!interval.empty()) argv.insert(argv.end(), {"-read_intervals", interval});
  argv.insert(argv.end(), {"-show_entries", "packet=pts_time,flags:frame=best_effort_timestamp_time",
                           "-of", "csv", FdPath(source.fd)});
  IntervalDecode d;
  PacketDecode& f = d.figures;
  Result<CommandOutput> r =
      RunForEachLine(argv,
                     [&](const std::string& line) {
                       std::vector<std::string> fields = CsvFields(line);
                       if (fields.size() < 2 || fields[1] == "N/A") return;
                       // (A packet flagged D, outside an edit list, is no frame to begin with.)
                       if (fields[0] == "packet" &&
                           (fields.size() < 3 || fields[2].find('D') == std::string::npos)) {
                         d.packets.push_back(fields[1]);
                       }
                       if (fields[0] != "frame") return;
                       d.shown.insert(fields[1]);
                       const double t = std::strtod(fields[1].c_str(), nullptr);
                       if (!f.any_shown || t < f.first_shown) f.first_shown = t;
                       if (!f.any_shown || t > f.last_shown) f.last_shown = t;
                       f.any_shown = true;
                     },
                     {source.fd});
  if (!r.ok() || r->exit_code != 0) return PacketReadError(source.name, r);
  return d;
}

}  // namespace

std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  return fields;
}

Status PacketReadError(const std::string& path, const Result<CommandOutput>& r) {
  if (!r.ok()) return r.status();
  return Status(StatusCode::kInputInvalid,
                path + ": ffprobe cannot read its packets: " + LastLines(r->err, 3));
}

Result<PacketDecode> FindLeadingUndecodable(const std::string& ffprobe, const SourceFile& source,
                                            int stream, int64_t first_key, int64_t packets) {
  int64_t window = std::max<int64_t>(first_key, 0) + 64;
  for (;;) {
    Result<IntervalDecode> d =
        DecodeInterval(ffprobe, source, stream, "%+#" + std::to_string(window));
    if (!d.ok()) return d.status();
    if (d->figures.any_shown || window >= packets) {
      for (const std::string& t : d->packets) {
        if (d->shown.count(t) == 0) d->figures.undecodable.insert(t);
      }
      return d->figures;
    }
    window *= 2;
  }
}

Result<PacketDecode> FindTrailingUndecodable(const std::string& ffprobe, const SourceFile& source,
                                             int stream, double from_s) {
  std::ostringstream interval;
  interval.precision(6);
  interval << std::fixed << std::max(from_s, 0.0) << "%";
  Result<IntervalDecode> d = DecodeInterval(ffprobe, source, stream, interval.str());
  if (!d.ok()) return d.status();
  for (const std::string& t : d->packets) {
    if (d->shown.count(t) > 0) continue;
    // Before the first picture shown: a reference lies before the seek, not a loss at the end.
    if (d->figures.any_shown && std::strtod(t.c_str(), nullptr) < d->figures.first_shown) continue;
    d->figures.undecodable.insert(t);
  }
  return d->figures;
}

Result<PacketDecode> FindUndecodablePictures(const std::string& ffprobe, const SourceFile& source,
                                             int stream) {
  Result<IntervalDecode> d = DecodeInterval(ffprobe, source, stream, "");
  if (!d.ok()) return d.status();
  for (const std::string& t : d->packets) {
    if (d->shown.count(t) == 0) d->figures.undecodable.insert(t);
  }
  return d->figures;
}

}  // namespace framemill
