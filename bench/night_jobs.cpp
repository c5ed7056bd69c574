#include "bench/night_jobs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "bench/index_video.h"
#include "bench/night_system.h"

namespace framemill::night {

namespace fs = std::filesystem;

const std::vector<std::string>& ModelNames() {
  static const std::vector<std::string> names = {"identity", "invert", "sharpen", "upscale2x"};
  return names;
}

int FlipBits(const std::string& model) { return model == "invert" ? 0xFFFF : 0; }

namespace {

std::string ModelPath(const Site& site, const std::string& name) {
  return site.in + "/" + name + ".pt";
}

// A user's output folder: owned by the user, 0755 (the service, root, writes into it).
std::string UserOut(const Site& site, int uid) { return site.out + "/u" + std::to_string(uid); }

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  return nlohmann::json::parse(in, nullptr, false);
}

// The bad jobs, by kind, with the reason code each must be filed with.
struct BadKind {
  const char* kind;
  const char* reason;
};
constexpr BadKind kBadKinds[] = {
    {"bad_json", "invalid_job"},           {"not_video", "input_invalid"},
    {"outside_roots", "path_not_allowed"}, {"other_users_dir", "path_not_allowed"},
    {"missing_input", "input_missing"},    {"fifo", "invalid_job"},
    {"unknown_key", "invalid_job"},
};

}  // namespace

std::vector<NightJob> MakeMix(const Site& site, const MixOptions& o, std::mt19937_64* rng) {
  fs::create_directories(site.in);
  for (const std::string& m : ModelNames()) {
    if (fs::exists(ModelPath(site, m))) continue;
    std::string out;
    if (RunCapture({site.framemill, "model", "export", m, ModelPath(site, m)}, site.scratch, &out,
                   nullptr) != 0) {
      throw std::runtime_error("framemill model export " + m + " failed: " + out);
    }
  }
  for (int uid : site.uids) {
    const std::string dir = UserOut(site, uid);
    fs::create_directories(dir);
    if (::chown(dir.c_str(), uid, uid) != 0 || ::chmod(dir.c_str(), 0755) != 0) {
      throw std::runtime_error("cannot give " + dir + " to uid " + std::to_string(uid));
    }
  }
  std::ofstream(site.in + "/not-video.mp4") << "this is not a video\n";
  fs::create_directories(fs::path(site.out).parent_path() / "forbidden");

  auto pick = [rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(*rng); };
  auto when = [&] { return std::uniform_real_distribution<double>(0, o.submit_window_s)(*rng); };
  std::vector<NightJob> jobs;
  for (int i = 0; i < o.good; ++i) {
    NightJob j;
    char name[16];
    std::snprintf(name, sizeof(name), "g%03d", i);
    j.name = name;
    j.uid = site.uids[pick(0, static_cast<int>(site.uids.size()) - 1)];
    j.priority = std::vector<int>{-5, 0, 0, 5}[pick(0, 3)];
    j.model = ModelNames()[pick(0, static_cast<int>(ModelNames().size()) - 1)];
    const auto [w, h] = o.sizes[pick(0, static_cast<int>(o.sizes.size()) - 1)];
    j.video.width = w;
    j.video.height = h;
    j.video.frames = pick(o.min_frames, o.max_frames);
    j.video.audio = pick(0, 2) != 0;
    j.video.path = site.in + "/v" + std::to_string(j.video.frames) + "-" + std::to_string(w) + "x" +
                   std::to_string(h) + (j.video.audio ? "-a" : "") + ".mp4";
    if (!fs::exists(j.video.path)) {
      bench::MakeIndexVideo(j.video.path, j.video.frames, w, h, j.video.fps,
                            j.video.audio ? 440 : 0);
    }
    j.output = UserOut(site, j.uid) + "/" + j.name + (pick(0, 1) ? ".mp4" : ".mkv");
    j.submit_at_s = i == 0 ? 0 : when();
    jobs.push_back(j);
  }
  for (int i = 0; i < o.bad; ++i) {
    const BadKind& k = kBadKinds[i % (sizeof(kBadKinds) / sizeof(kBadKinds[0]))];
    NightJob j;
    j.good = false;
    j.kind = k.kind;
    j.expect_reason = k.reason;
    j.name = "bad-" + std::to_string(i) + "-" + j.kind;
    j.uid = site.uids[i % site.uids.size()];
    j.model = "identity";
    j.video = jobs.empty() ? Video{} : jobs[static_cast<size_t>(i) % jobs.size()].video;
    j.output = UserOut(site, j.uid) + "/" + j.name + ".mp4";
    j.submit_at_s = when();
    jobs.push_back(j);
  }
  return jobs;
}

namespace {

std::string BadJobText(const Site& site, const NightJob& j) {
  nlohmann::json job = {
      {"input", j.video.path}, {"output", j.output}, {"model", ModelPath(site, j.model)}};
  if (j.kind == "bad_json") return "{\"input\": \"" + j.video.path + "\", \"output\": ";
  if (j.kind == "not_video") job["input"] = site.in + "/not-video.mp4";
  if (j.kind == "missing_input") job["input"] = site.in + "/missing.mp4";
  if (j.kind == "outside_roots") {
    job["output"] = (fs::path(site.out).parent_path() / "forbidden" / (j.name + ".mp4")).string();
  }
  if (j.kind == "other_users_dir") {
    // Into the folder of the other user, which this one cannot write.
    for (int uid : site.uids) {
      if (uid != j.uid) job["output"] = UserOut(site, uid) + "/" + j.name + ".mp4";
    }
  }
  if (j.kind == "unknown_key") job["chunk_size"] = 8;
  return job.dump();
}

}  // namespace

std::string Submit(const Site& site, NightJob* j) {
  if (j->good) {
    const std::string u = std::to_string(j->uid);
    std::string out, err;
    const int code = RunCapture(
        {"setpriv", "--reuid=" + u, "--regid=" + u, "--clear-groups", site.framemill, "--config",
         site.config, "submit", j->video.path, "--model", ModelPath(site, j->model), "--output",
         j->output, "--priority", std::to_string(j->priority)},
        site.scratch, &out, &err);
    if (code != 0) return "submit exited " + std::to_string(code) + ": " + err;
    j->id = out.substr(0, out.find('\n'));
    j->submitted = !j->id.empty();
    return j->submitted ? "" : "submit printed no id";
  }
  // A bad job goes in as a file owned by its user, written in tmp/ and renamed into incoming/.
  const std::string tmp_dir = site.spool + "/tmp", in_dir = site.spool + "/incoming";
  std::error_code ec;
  if (!fs::exists(tmp_dir)) {
    fs::create_directories(tmp_dir, ec);
    ::chmod(tmp_dir.c_str(), 01733);
  }
  if (!fs::exists(in_dir)) {
    fs::create_directories(in_dir, ec);
    ::chmod(in_dir.c_str(), 01777);
  }
  const std::string tmp = tmp_dir + "/" + j->name + ".json";
  if (j->kind == "fifo") {
    if (::mkfifo(tmp.c_str(), 0644) != 0) return "mkfifo " + tmp + ": " + std::strerror(errno);
  } else {
    const std::string text = BadJobText(site, *j);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const bool written =
        fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
        ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    if (!written) {
      ::unlink(tmp.c_str());
      return "cannot write " + tmp + ": " + std::strerror(errno);
    }
  }
  if (::chown(tmp.c_str(), j->uid, j->uid) != 0 ||
      ::rename(tmp.c_str(), (in_dir + "/" + j->name + ".json").c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot put " + j->name + " into incoming/: " + why;
  }
  j->id = j->name;
  j->submitted = true;
  return "";
}

std::string StateOf(const Site& site, const NightJob& j) {
  if (j.id.empty()) return "";
  for (const char* state : {"done", "failed", "active"}) {
    if (fs::exists(site.spool + "/" + state + "/" + j.id)) return state;
  }
  return fs::exists(site.spool + "/incoming/" + j.id + ".json") ? "incoming" : "";
}

std::string FailedReason(const Site& site, const NightJob& j) {
  const nlohmann::json r = ReadJson(site.spool + "/failed/" + j.id + "/result.json");
  if (!r.is_object() || !r.contains("reason") || !r["reason"].is_object()) return "";
  return r["reason"].value("code", "");
}

namespace {

std::string CheckOutput(const Site& site, const NightJob& j, int64_t* frames_checked) {
  const nlohmann::json r = ReadJson(site.spool + "/done/" + j.id + "/result.json");
  if (!r.is_object() || r.value("status", "") != "done") return "done/ without a done result.json";
  if (!fs::exists(j.output)) return "no output at " + j.output;
  const int64_t bad = bench::Misplaced(
      j.output, j.video.frames, site.scratch + "/check-" + j.name + ".log", FlipBits(j.model));
  if (bad != 0) {
    return bad < 0 ? "output frame count differs from the input's " +
                         std::to_string(j.video.frames) + " (or it does not decode)"
                   : std::to_string(bad) + " frames show the wrong index";
  }
  *frames_checked += j.video.frames;
  const double a_in = bench::AudioSeconds(j.video.path), a_out = bench::AudioSeconds(j.output);
  if (j.video.audio) {
    char line[160];
    std::snprintf(line, sizeof(line), "audio %.3f s, the source's %.3f s (more than a frame off)",
                  a_out, a_in);
    if (a_out < 0 || std::fabs(a_out - a_in) > 1.0 / j.video.fps + 1e-6) return line;
  } else if (a_out >= 0) {
    return "an audio stream the source does not have";
  }
  return "";
}

}  // namespace

std::string CheckJob(const Site& site, const NightJob& j, int64_t* frames_checked) {
  if (!j.submitted) return "never submitted";
  const std::string state = StateOf(site, j);
  if (j.good && !j.cancelled) {
    if (state != "done") {
      const std::string reason = FailedReason(site, j);
      return "ended " + (state.empty() ? std::string("nowhere") : state) +
             (reason.empty() ? "" : " (" + reason + ")");
    }
    return CheckOutput(site, j, frames_checked);
  }
  if (j.good && j.cancelled) {
    if (state == "done") return CheckOutput(site, j, frames_checked);
    const std::string reason = FailedReason(site, j);
    return state == "failed" && reason == "cancelled"
               ? ""
               : "cancelled, but ended " + state + " (" + reason + ")";
  }
  const std::string reason = FailedReason(site, j);
  if (state != "failed" || reason != j.expect_reason) {
    return "expected failed (" + j.expect_reason + "), ended " +
           (state.empty() ? std::string("nowhere") : state) + " (" + reason + ")";
  }
  return "";
}

}  // namespace framemill::night
