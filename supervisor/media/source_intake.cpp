#include "supervisor/media/source_intake.h"

#include <map>
#include <set>
#include <sstream>

#include "common/mutex.h"
#include "supervisor/process/program_answers.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

// Demuxers that open files or URLs named inside the input (refused unless allowed).
const std::set<std::string>& ListDemuxers() {
  static const std::set<std::string> names = {
      "hls", "dash", "concat", "image2", "imf", "vobsub", "webm_dash_manifest"};
  return names;
}

// Demuxers never allowed for a job's input: network sessions and scripts.
const std::set<std::string>& NeverDemuxers() {
  static const std::set<std::string> names = {"rtp",      "rtsp",        "sap",  "sdp",
                                              "avisynth", "vapoursynth", "lavfi"};
  return names;
}

// The names in the table `ffprobe -demuxers` or `-devices` prints: " D  name  description"
// (a name may be "a,b,c"). `flag_d`: only rows whose flags include D.
Result<std::vector<std::string>> FormatTable(const std::string& ffprobe, const std::string& which) {
  Result<CommandOutput> r = AskProgram({ffprobe, "-hide_banner", which});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status(StatusCode::kIo, ffprobe + " " + which + " failed: " + LastLines(r->err, 3));
  }
  std::vector<std::string> names;
  std::istringstream in(r->out);
  bool table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(" --", 0) == 0) {
      table = true;
      continue;
    }
    if (!table || line.size() < 5) continue;
    std::istringstream fields(line.substr(4));
    std::string name;
    fields >> name;
    if (line[1] != 'D' || name.empty()) continue;
    for (size_t start = 0; start <= name.size();) {
      size_t comma = name.find(',', start);
      if (comma == std::string::npos) comma = name.size();
      if (comma > start) names.push_back(name.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return names;
}

}  // namespace

SourceRules JobSourceRules(const Config& config, const UserRights* reader) {
  return SourceRules{
      config.ffprobe, InputRoots::Within(config.allowed_input_roots),
      config.allow_playlist_inputs ? PlaylistInputs::kAllow : PlaylistInputs::kRefuse, reader};
}

Result<UniqueFd> OpenInput(const std::string& path, const SourceRules& rules, const char* what) {
  Result<UniqueFd> fd = OpenCheckedFile(CheckedKind::kInput, path, rules.roots.list());
  if (!fd.ok() || rules.reader == nullptr) return fd;
  FM_RETURN_IF_ERROR(CheckMayReadOpened(*rules.reader, fd->get(), what));
  return fd;
}

Result<std::vector<std::string>> InputRestrictions(const std::string& ffprobe,
                                                   PlaylistInputs playlists) {
  struct Whitelists {
    Mutex mu;
    std::map<std::string, std::string> by_key GUARDED_BY(mu);  // ffprobe|policy -> whitelist
  };
  static Whitelists cache;
  const std::string key = ffprobe + (playlists == PlaylistInputs::kAllow ? "|allow" : "|refuse");
  MutexLock lock(&cache.mu);
  auto it = cache.by_key.find(key);
  if (it == cache.by_key.end()) {
    Result<std::vector<std::string>> demuxers = FormatTable(ffprobe, "-demuxers");
    if (!demuxers.ok()) return demuxers.status();
    Result<std::vector<std::string>> devices = FormatTable(ffprobe, "-devices");
    if (!devices.ok()) return devices.status();
    std::set<std::string> refused(devices->begin(), devices->end());
    refused.insert(NeverDemuxers().begin(), NeverDemuxers().end());
    if (playlists == PlaylistInputs::kRefuse) {
      refused.insert(ListDemuxers().begin(), ListDemuxers().end());
    }
    std::string list;
    for (const std::string& name : *demuxers) {
      if (refused.count(name) == 0) list += (list.empty() ? "" : ",") + name;
    }
    if (list.empty()) return Status(StatusCode::kIo, ffprobe + " -demuxers lists no demuxer");
    it = cache.by_key.emplace(key, list).first;
  }
  return std::vector<std::string>{"-protocol_whitelist", "file,pipe", "-format_whitelist",
                                  it->second};
}

Result<SourceFile> BindSource(int fd, const std::string& name, const std::string& ffprobe,
                              PlaylistInputs playlists) {
  Result<std::vector<std::string>> restrictions = InputRestrictions(ffprobe, playlists);
  if (!restrictions.ok()) return restrictions.status();
  return SourceFile{fd, name, std::move(*restrictions)};
}

Result<TakenSource> TakeSource(const std::string& path, const SourceRules& rules, bool frame_times,
                               TruncatedInput truncation) {
  TakenSource taken;
  Result<UniqueFd> fd = OpenInput(path, rules, "input");
  if (!fd.ok()) return fd.status();
  taken.fd = std::move(*fd);
  Result<SourceFile> source = BindSource(taken.fd.get(), path, rules.ffprobe, rules.playlists);
  if (!source.ok()) return source.status();
  taken.source = std::move(*source);
  Result<MediaInfo> media = ProbeMedia(rules.ffprobe, taken.source, frame_times, truncation);
  if (!media.ok()) return media.status();
  taken.media = std::move(*media);
  return taken;
}

Result<MediaInfo> ProbeOwnFile(const std::string& ffprobe, const std::string& path,
                               bool frame_times) {
  Result<TakenSource> taken = TakeSource(
      path, SourceRules{ffprobe, InputRoots::Anywhere(), PlaylistInputs::kRefuse, nullptr},
      frame_times);
  if (!taken.ok()) return taken.status();
  return std::move(taken->media);
}

}  // namespace framemill
