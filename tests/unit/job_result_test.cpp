// supervisor/report/job_result: the spool's result.json and progress.json, the lines people read
// from them, and the exit codes of the `framemill` commands. Scripts read these keys and words
// (README.md, "Scripting"): a change here is a change of the interface.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/report/job_result.h"

namespace fm = framemill;

namespace {

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.insert(key);
  return keys;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A finished job's report with a figure in every field the result names.
fm::JobReport FinishedReport() {
  fm::JobReport r;
  r.output = "/out/film.mkv";
  r.frames = 300;
  r.chunks = 10;
  r.segments = 2;
  r.segments_resumed = 1;
  r.frames_resumed = 150;
  r.in_width = 640;
  r.in_height = 360;
  r.out_width = 1280;
  r.out_height = 720;
  r.worker_input_format = "rgb24";
  r.output_pix_fmt = "yuv420p";
  r.seconds = 12.5;
  r.timeline = "/out/film.mkv.timeline.jsonl";
  r.worker_sandbox = "off";
  r.warnings = {"kept 8 bits"};
  r.mux = "live";
  r.dispatch.workers_started = 3;
  r.dispatch.crashes = 1;
  r.dispatch.kills = 2;
  r.dispatch.chunk_retries = 4;
  r.dispatch.recycles = {{"rss", 2}, {"gpu", 1}};
  r.stages.start_s = 1.5;
  r.stages.workers_wait_s = 1.25;
  return r;
}

}  // namespace

TEST_CASE("job result: the exit code of every StatusCode") {
  CHECK(fm::ExitCodeOf(fm::StatusCode::kOk) == fm::kExitOk);
  CHECK(fm::ExitCodeOf(fm::StatusCode::kCancelled) == fm::kExitStopped);
  for (fm::StatusCode code :
       {fm::StatusCode::kInvalidJob, fm::StatusCode::kInvalidConfig, fm::StatusCode::kInputMissing,
        fm::StatusCode::kInputInvalid, fm::StatusCode::kModelInvalid,
        fm::StatusCode::kOutputInvalid, fm::StatusCode::kWorkerFailed,
        fm::StatusCode::kEncodeFailed, fm::StatusCode::kVerifyFailed, fm::StatusCode::kIo,
        fm::StatusCode::kPathNotAllowed, fm::StatusCode::kNoSpace, fm::StatusCode::kInternal,
        fm::StatusCode::kDecoderCrashed, fm::StatusCode::kEncoderCrashed}) {
    INFO(fm::StatusCodeName(code));
    CHECK(fm::ExitCodeOf(code) == fm::kExitFailed);
  }
  // The values scripts test for, and the help line that states them.
  CHECK(fm::kExitOk == 0);
  CHECK(fm::kExitFailed == 1);
  CHECK(fm::kExitUsage == 2);
  CHECK(fm::kExitNoSuchJob == 3);
  CHECK(fm::kExitStopped == 130);
  CHECK(std::string(fm::kExitCodesHelp) ==
        "Exit codes: 0 ok, 1 failed, 2 usage error, 3 no such job, 130 stopped.");
}

TEST_CASE("job result: a finished job's result.json has every key, with the report's figures") {
  const nlohmann::json j =
      fm::DoneResultJson("j1", FinishedReport(), "2026-01-02T03:04:05Z", "2026-01-02T03:05:00Z");
  CHECK(Keys(j) == std::set<std::string>{"version",
                                         "id",
                                         "status",
                                         "output",
                                         "frames",
                                         "seconds",
                                         "started_at",
                                         "finished_at",
                                         "workers_started",
                                         "recycles",
                                         "recycles_by_reason",
                                         "crashes",
                                         "kills",
                                         "chunk_retries",
                                         "segments",
                                         "segments_resumed",
                                         "frames_resumed",
                                         "stages",
                                         "worker_input_format",
                                         "output_pix_fmt",
                                         "warnings",
                                         "worker_sandbox",
                                         "worker_start",
                                         "workers_wait_s",
                                         "workers_warm",
                                         "workers_spare",
                                         "mux",
                                         "arena",
                                         "faults",
                                         "model_fallbacks",
                                         "skipped_packets",
                                         "truncated"});
  CHECK(j["model_fallbacks"] ==
        nlohmann::json{{"events", 0}, {"batch", nullptr}, {"tile", nullptr}});
  CHECK(j["mux"] == "live");
  CHECK(j["version"] == 1);
  CHECK(j["id"] == "j1");
  CHECK(j["status"] == "done");
  CHECK(j["output"] == "/out/film.mkv");
  CHECK(j["frames"] == 300);
  CHECK(j["seconds"] == 12.5);
  CHECK(j["started_at"] == "2026-01-02T03:04:05Z");
  CHECK(j["finished_at"] == "2026-01-02T03:05:00Z");
  CHECK(j["workers_started"] == 3);
  CHECK(j["recycles"] == 3);  // every reason's, summed
  CHECK(j["recycles_by_reason"] == nlohmann::json{{"gpu", 1}, {"rss", 2}});
  CHECK(j["crashes"] == 1);
  CHECK(j["kills"] == 2);
  CHECK(j["chunk_retries"] == 4);
  CHECK(j["segments"] == 2);
  CHECK(j["segments_resumed"] == 1);
  CHECK(j["frames_resumed"] == 150);
  CHECK(j["worker_input_format"] == "rgb24");
  CHECK(j["output_pix_fmt"] == "yuv420p");
  CHECK(j["warnings"] == nlohmann::json{"kept 8 bits"});
  CHECK(j["worker_sandbox"] == "off");
  CHECK(j["stages"].contains("pipeline_s"));
  // The wait for the first ready worker, apart from the rest of the start, and whether the
  // workers were kept loaded from the previous job.
  CHECK(j["workers_wait_s"] == 1.25);
  CHECK(j["stages"]["workers_wait_s"] == 1.25);
  CHECK(j["stages"]["start_s"] == 1.5);
  CHECK(j["workers_warm"] == false);
  // The decoding done while the workers started, apart from the pipeline's, in the JSON and in
  // the stages line (which leaves it out when there was none).
  fm::StageTimes st;
  st.pipeline_s = 10;
  st.decode_s = 2;
  CHECK(st.ToJson()["decode_early_s"] == 0.0);
  CHECK(st.Summary().find("before it") == std::string::npos);
  st.decode_early_s = 0.4;
  CHECK(st.ToJson()["decode_early_s"] == 0.4);
  CHECK(st.Summary().find("decode 2.00 s busy (20%) and 0.40 s before it, while the workers "
                          "started,") != std::string::npos);
  // The encoders' trail after the workers' last chunk, in both.
  st.tail_s = 0.56;
  CHECK(st.ToJson()["tail_s"] == 0.56);
  CHECK(st.Summary().find("; 0.56 s after the workers' last chunk], mux") != std::string::npos);
  // The workers' exit after the output is placed, apart from the mux; left out of the line when
  // none was waited for (workers kept loaded).
  CHECK(st.Summary().find("exit") == std::string::npos);
  st.mux_s = 0.1;
  st.stop_s = 0.35;
  CHECK(st.ToJson()["stop_s"] == 0.35);
  CHECK(st.Summary().find("mux 0.10 s, the workers' exit 0.35 s") != std::string::npos);
  fm::JobReport warm = FinishedReport();
  warm.workers_warm = true;
  CHECK(fm::DoneResultJson("j1", warm, "", "")["workers_warm"] == true);
  CHECK(j["workers_spare"] == false);
  fm::JobReport spare = FinishedReport();
  spare.workers_spare = true;
  CHECK(fm::DoneResultJson("j1", spare, "", "")["workers_spare"] == true);
  warm.arena = "kept";
  CHECK(fm::DoneResultJson("j1", warm, "", "")["arena"] == "kept");
  CHECK(Keys(j["faults"]) ==
        std::set<std::string>{"decoder_restarts", "attempts", "faults_retried"});
  CHECK(fm::ResultReasonCode(j) == "");
  CHECK(fm::ResultOutput(j) == "/out/film.mkv");
}

TEST_CASE("job result: result.json says how many packets were skipped, why, and what a truncated "
          "input lost") {
  fm::JobReport r = FinishedReport();
  nlohmann::json j = fm::DoneResultJson("j1", r, "", "");
  CHECK(j["skipped_packets"] == nlohmann::json{{"count", 0}, {"reason", ""}});
  CHECK(j["truncated"].is_null());
  const std::string whole = fm::RunSummary(r);
  CHECK_FALSE(Contains(whole, "skipped"));
  CHECK_FALSE(Contains(whole, "truncated"));

  r.skipped_packets = 14;
  r.frames_announced = 340;  // 300 rendered
  r.frame_rate = 25;
  j = fm::DoneResultJson("j1", r, "", "");
  CHECK(j["skipped_packets"] ==
        nlohmann::json{{"count", 14},
                       {"reason", "leading packets before the first decodable picture"}});
  CHECK(j["truncated"] == nlohmann::json{{"frames_announced", 340},
                                         {"frames_rendered", 300},
                                         {"frames_lost", 40},
                                         {"seconds_lost", 1.6}});
  const std::string s = fm::RunSummary(r);
  INFO(s);
  CHECK(Contains(s, "framemill: skipped 14 packets: leading packets before the first decodable "
                    "picture\n"));
  CHECK(Contains(s, "framemill: truncated input: 300 of 340 frames announced rendered, 1.60 s "
                    "lost\n"));
}

TEST_CASE("job result: damaged pictures inside the stream are skipped packets with their own reason") {
  fm::JobReport r = FinishedReport();
  r.skipped_packets = 3;
  r.damaged_pictures = 3;
  CHECK(fm::DoneResultJson("j1", r, "", "")["skipped_packets"] ==
        nlohmann::json{{"count", 3}, {"reason", "damaged pictures that do not decode"}});
  CHECK(Contains(fm::RunSummary(r),
                 "framemill: skipped 3 packets: damaged pictures that do not decode\n"));
  r.skipped_packets = 17;  // 14 leading ones as well
  CHECK(fm::DoneResultJson("j1", r, "", "")["skipped_packets"]["reason"] ==
        "leading packets before the first decodable picture; damaged pictures that do not decode");
}

TEST_CASE("job result: a failed job's result.json names the reason code and message") {
  const nlohmann::json j =
      fm::FailedResultJson("j2", fm::Status(fm::StatusCode::kInputInvalid, "input: not a video"));
  CHECK(Keys(j) == std::set<std::string>{"version", "id", "status", "reason"});
  CHECK(j["version"] == 1);
  CHECK(j["id"] == "j2");
  CHECK(j["status"] == "failed");
  CHECK(j["reason"] ==
        nlohmann::json{{"code", "input_invalid"}, {"message", "input: not a video"}});
  CHECK(fm::ResultReasonCode(j) == "input_invalid");
  CHECK(fm::ResultOutput(j) == "");
  // A code of the service's own, not a StatusCode.
  CHECK(fm::ResultReasonCode(fm::FailedResultJson("j3", "crashed", "3 times")) == "crashed");
  // What a damaged result.json reads as: no code.
  for (const char* text : {"null", "[]", "{\"reason\": 3}", "{\"reason\": {\"code\": 7}}"}) {
    INFO(text);
    CHECK(fm::ResultReasonCode(nlohmann::json::parse(text)) == "");
  }
}

TEST_CASE("job result: result.json's times are UTC, to the second") {
  CHECK(fm::IsoUtc(0) == "1970-01-01T00:00:00Z");
  CHECK(fm::IsoUtc(1767225600 + 3661) == "2026-01-01T01:01:01Z");
  CHECK(fm::IsoNow().size() == std::string("2026-01-01T01:01:01Z").size());
}

TEST_CASE("job result: progress.json has every key, and `status` reads it back as one line") {
  fm::JobProgress p;
  p.frames_total = 300;
  p.frames_done = 150;  // the model is 30 frames ahead of the encoders
  p.frames_written = 120;
  p.segments_done = 1;
  p.segments_total = 3;
  fm::WorkerSnapshot w;
  w.worker = 1;
  w.generation = 2;
  w.pid = 4242;
  w.frames = 40;
  w.rss_bytes = 100ull << 20;
  w.gpu_reserved_bytes = 3ull << 19;  // 1.5 MiB
  p.workers = {w};
  const nlohmann::json j = fm::ProgressJson("j1", p, 10.0);
  CHECK(Keys(j) == std::set<std::string>{"id", "frames_done", "frames_total", "segments_done",
                                         "segments_total", "frames_written", "frames_resumed",
                                         "elapsed_s", "fps", "workers"});
  CHECK(j["id"] == "j1");
  CHECK(j["frames_done"] == 150);
  CHECK(j["frames_written"] == 120);
  CHECK(j["frames_total"] == 300);
  CHECK(j["segments_done"] == 1);
  CHECK(j["segments_total"] == 3);
  CHECK(j["elapsed_s"] == 10.0);
  CHECK(j["fps"] == 12.0);
  REQUIRE(j["workers"].size() == 1);
  CHECK(j["workers"][0] == nlohmann::json{{"worker", 1},
                                          {"gen", 2},
                                          {"pid", 4242},
                                          {"frames", 40},
                                          {"rss_mb", 100.0},
                                          {"gpu_reserved_mb", 1.5}});
  // Read back from its text, as `list` and `status` do.
  const nlohmann::json back = nlohmann::json::parse(j.dump());
  // Frames written count (the rate and the ETA too); the model's lead is named.
  CHECK(fm::ProgressLine(back) ==
        "120/300 frames written (40.0%), 12.0 fps, ETA 0:00:15, model at 150");
  CHECK(fm::ProgressWorkerLines(back) ==
        std::vector<std::string>{
            "worker 1 gen 2 pid 4242: 40 frames, rss 100 MiB, gpu reserved 2 MiB"});
  // The service's GPUs the job holds; a job queued for GPUs.
  nlohmann::json on_gpus = back;
  on_gpus["service_gpus"] = {0, 1};
  CHECK(fm::ProgressLine(on_gpus) ==
        "120/300 frames written (40.0%), 12.0 fps, ETA 0:00:15, model at 150, on GPUs [0, 1]");
  CHECK(fm::ProgressLine({{"id", "j1"}, {"waiting_for_gpus", {2}}}) == "waiting for GPUs [2]");
  CHECK(fm::ProgressLine({{"id", "j1"}, {"waiting_for_gpus", nlohmann::json::array()}}) ==
        "waiting for a free GPU");
  // A progress file of another version, or damaged: fields of other types read as absent.
  nlohmann::json odd = back;
  odd["frames_written"] = "120";
  odd["fps"] = nullptr;
  odd["workers"] = {{{"worker", "1"}, {"frames", 40.5}}, 7};
  std::string odd_line;
  CHECK_NOTHROW(odd_line = fm::ProgressLine(odd));
  CHECK(odd_line.rfind("150/300 frames written", 0) == 0);  // frames_done stands in
  std::vector<std::string> odd_workers;
  CHECK_NOTHROW(odd_workers = fm::ProgressWorkerLines(odd));
  CHECK(odd_workers.size() == 2);
  odd["workers"] = "none";
  CHECK(fm::ProgressWorkerLines(odd).empty());
  // A job waiting for disk space (job/space_wait.h): no rate, the frames kept.
  fm::JobProgress waiting = p;
  waiting.waiting = "no_space: /out: No space left on device";
  waiting.waiting_s = 75;
  const nlohmann::json waited = fm::ProgressJson("j1", waiting, 10.0);
  CHECK(waited["waiting"] == "no_space: /out: No space left on device");
  CHECK(fm::ProgressLine(waited) ==
        "waiting for disk space for " + fm::DurationText(75) +
            " (no_space: /out: No space left on device); 120/300 frames written and kept");
  CHECK_FALSE(j.contains("waiting"));  // a running job's has none
  // No progress.json yet; no time passed yet.
  // A resumed job: the rate is this run's frames (120 - 100 in 10 s), the kept ones are named.
  fm::JobProgress resumed = p;
  resumed.frames_resumed = 100;
  const nlohmann::json r = fm::ProgressJson("j1", resumed, 10.0);
  CHECK(r["fps"] == 2.0);
  CHECK(fm::ProgressLine(r) == "120/300 frames written (40.0%), 2.0 fps, ETA 0:01:30, model at "
                               "150, resumed (100 frames kept from an earlier run)");
  // No rate before this run rendered a frame: no ETA of 0 s at 0%.
  CHECK(fm::ProgressLine(fm::ProgressJson("j1", fm::JobProgress{}, 0.0)) ==
        "0/0 frames written (0.0%), no rate yet");
  // A progress.json of an older framemill (no frames_written) reads as before.
  CHECK(fm::ProgressLine({{"frames_done", 10}, {"frames_total", 20}, {"fps", 0.0}}) ==
        "10/20 frames written (50.0%), no rate yet");
  CHECK(fm::DurationText(3723.4) == "1:02:03");
  CHECK(fm::ProgressLine(nullptr) == "starting");
  CHECK(fm::ProgressWorkerLines(nullptr).empty());
  CHECK(fm::ProgressJson("j1", p, 0.0)["fps"] == 0.0);
  CHECK(fm::EtaSeconds(120, 300, 0.0) == 0.0);
}

TEST_CASE("job result: a stitch's summary has no rate and no worker lines of zeros") {
  fm::JobReport r = FinishedReport();
  r.dispatch = fm::DispatchStats{};  // a stitch starts no workers
  r.worker_sandbox.clear();
  const std::string s = fm::RunSummary(r);
  INFO(s);
  CHECK(Contains(s, "framemill: wrote /out/film.mkv: 300 frames 1280x720, 2 segments joined in "
                    "12.5 s\n"));
  CHECK_FALSE(Contains(s, "fps"));
  CHECK_FALSE(Contains(s, "worker sandbox"));
  CHECK_FALSE(Contains(s, "workers started"));
  // A part renders into its directory: "rendered", not "wrote".
  fm::JobReport part = FinishedReport();
  part.mux.clear();
  CHECK(Contains(fm::RunSummary(part), "framemill: rendered a part into /out/film.mkv: 300 frames"));
}

TEST_CASE("job result: `framemill run`'s summary states the result's figures") {
  fm::JobReport r = FinishedReport();
  const std::string s = fm::RunSummary(r);
  CHECK(Contains(s,
                 "framemill: wrote /out/film.mkv: 300 frames 640x360 (rgb24 to the workers) -> "
                 "1280x720 in 12.5 s (12.0 fps over the 150 frames this run rendered), 10 "
                 "chunks, 2 segments\n"));
  // The rate is this run's own: the 150 frames of the segment an earlier run kept are not in it.
  CHECK(Contains(s, "framemill: resumed: 1 of 2 segments (150 frames) kept from an earlier run; "
                    "this run rendered 150 frames\n"));
  fm::JobReport fresh = FinishedReport();
  fresh.frames_resumed = 0;
  fresh.segments_resumed = 0;
  CHECK(Contains(fm::RunSummary(fresh), "1280x720 in 12.5 s (24.0 fps), 10 chunks"));
  CHECK(Contains(s, "framemill: output pixel format yuv420p\n"));
  CHECK(Contains(s, "framemill: warning: kept 8 bits\n"));
  CHECK(Contains(s,
                 "framemill: workers started 3, recycled 3 (gpu 1, rss 2), crashed 1, killed 2; "
                 "chunks retried 4\n"));
  CHECK(Contains(s, "framemill: memory timeline: /out/film.mkv.timeline.jsonl\n"));
  CHECK(Contains(s, "framemill: faults survived: decoder restarts 0, job attempts 1\n"));
  CHECK(Contains(s, "framemill: workers started for this job, first ready after 1.25 s; arena "
                    "none\n"));
  CHECK(Contains(s, "start 1.50 s (1.25 s until a worker was ready)"));
  CHECK(Contains(s, " (joined beside the render)\n"));
  CHECK_FALSE(Contains(s, "framemill: report:"));  // none written
  r.report = "/out/film.mkv.report.html";
  r.dispatch.recycles.clear();
  const std::string t = fm::RunSummary(r);
  CHECK(Contains(t, "framemill: report: /out/film.mkv.report.html\n"));
  CHECK(Contains(t, "recycled 0, crashed 1"));
  r.mux = "after";
  CHECK_FALSE(Contains(fm::RunSummary(r), "joined beside the render"));
  r.workers_spare = true;
  CHECK(Contains(fm::RunSummary(r),
                 "framemill: workers loaded by a spare (started before the job), first ready "
                 "after 1.25 s;"));
  r.workers_warm = true;
  r.arena = "kept";
  CHECK(Contains(fm::RunSummary(r),
                 "framemill: workers warm (kept loaded from the previous job), first ready after "
                 "1.25 s; arena kept from the previous job\n"));
  r.arena = "early";
  CHECK(Contains(fm::RunSummary(r), "; arena made while the workers started\n"));
  CHECK(t.back() == '\n');
}
