// framemill-night's queue: the mix of good and bad jobs (index videos of several sizes and
// lengths, with and without audio, several models, priorities, two users), how each is put into
// the spool, and the check of how each ended. Single-threaded.
#pragma once

#include <random>
#include <string>
#include <vector>

namespace framemill::night {

// Where the night's service lives, as the jobs need it.
struct Site {
  std::string framemill;  // the framemill binary
  std::string config;     // the service's config file
  std::string spool;      // its spool_dir (a tmpfs)
  std::string in;         // inputs and models (allowed input and model root)
  std::string out;        // outputs: out/u<uid>/ per user (a tmpfs; the allowed output root)
  std::string scratch;    // the night's own temporary files
  std::vector<int> uids;  // the submitting users (made-up uids)
};

struct Video {
  std::string path;
  int frames = 0, width = 0, height = 0, fps = 25;
  bool audio = false;
};

// The models the good jobs use (framemill model export NAME) and what each does to the index a
// frame shows: XOR 0xFFFF for `invert`, nothing for the others (upscale2x doubles the frame,
// whose blocks still read the same).
const std::vector<std::string>& ModelNames();
int FlipBits(const std::string& model);

struct NightJob {
  std::string name;  // the night's own name: g03, bad-fifo, ...
  std::string id;    // the spool's id once submitted
  bool good = true;
  std::string expect_reason;  // a bad job's reason code
  int uid = 0;
  int priority = 0;
  std::string model;  // a model name (good jobs)
  Video video;
  std::string output;
  double submit_at_s = 0;  // when, in seconds after the start
  bool submitted = false;
  bool cancelled = false;    // a cancel was sent: failed as `cancelled`, or done before it took
  int no_space_retries = 0;  // `framemill retry` sent after a no_space failure
  std::string kind;          // a bad job's kind (bad_json, fifo, ...)
};

struct MixOptions {
  int good = 8, bad = 4;
  int min_frames = 24, max_frames = 72;
  std::vector<std::pair<int, int>> sizes = {{64, 48}, {96, 64}};
  double submit_window_s = 30;  // jobs arrive at random times in [0, this)
};

// Makes the videos and models under site.in (each video once per directory), and the jobs,
// drawn from `rng`. Throws std::runtime_error when a video or model cannot be made.
std::vector<NightJob> MakeMix(const Site& site, const MixOptions& o, std::mt19937_64* rng);

// Puts the job into the spool: a good job through `framemill submit` as its user, a bad one as
// a file (owned by its user) renamed into incoming/. Returns "" or why it failed (a full spool).
std::string Submit(const Site& site, NightJob* job);

// The state folder the job is in ("incoming", "active", "done", "failed" or "").
std::string StateOf(const Site& site, const NightJob& job);

// The reason code of a failed job ("" when not failed or unreadable).
std::string FailedReason(const Site& site, const NightJob& job);

// Checks how the job ended; "" when as expected, else what is wrong. Good jobs: done, the output
// frame-exact (its input's frame count, frame i showing i) with audio within a frame of the
// source's (none when the source has none). Bad jobs: failed with their reason. Cancelled jobs:
// failed as `cancelled`, or done and frame-exact.
std::string CheckJob(const Site& site, const NightJob& job, int64_t* frames_checked);

}  // namespace framemill::night
