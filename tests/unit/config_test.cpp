#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <unistd.h>

#include "common/config.h"
#include "common/job_file.h"

using framemill::LoadConfig;
using framemill::ParseConfig;
using framemill::StatusCode;
using nlohmann::json;

TEST_CASE("an empty config gives the documented defaults") {
  auto c = ParseConfig(json::object());
  REQUIRE(c.ok());
  CHECK(c->defaults.chunk_frames == 32);
  CHECK(c->defaults.workers == 2);
  CHECK(Name(c->defaults.device) == "auto");
  CHECK(c->arena_mb == 4096);
  CHECK(c->ffmpeg == "ffmpeg");
}

TEST_CASE("config keys are read, nested defaults included") {
  json j = {{"arena_mb", 512},
            {"log_level", "debug"},
            {"defaults", {{"workers", 4}, {"encoder", {{"preset", "slow"}}}}}};
  auto c = ParseConfig(j);
  REQUIRE(c.ok());
  CHECK(c->arena_mb == 512);
  CHECK(c->log_level == "debug");
  CHECK(c->defaults.workers == 4);
  CHECK(c->defaults.encoder.preset == "slow");
  CHECK(c->defaults.encoder.crf == 18);
}

TEST_CASE("recycle and kill limits are read, and a hard limit under the soft one is refused") {
  json j = {{"defaults",
             {{"recycle", {{"rss_mb", 800}, {"max_chunks", 50}, {"warm_standby", false}}},
              {"kill", {{"rss_mb", 1200}, {"grace_s", 3}}},
              {"hang_timeout_s", 45}}}};
  auto c = ParseConfig(j);
  REQUIRE(c.ok());
  CHECK(c->defaults.recycle.rss_mb == 800);
  CHECK(c->defaults.recycle.max_chunks == 50);
  CHECK_FALSE(c->defaults.recycle.warm_standby);
  CHECK(c->defaults.kill.rss_mb == 1200);
  CHECK(c->defaults.kill.grace_s == 3);
  CHECK(c->defaults.hang_timeout_s == 45);
  j["defaults"]["kill"]["rss_mb"] = 700;
  c = ParseConfig(j);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message() == "config.defaults.kill: rss_mb must be above recycle.rss_mb");
  c = ParseConfig({{"defaults", {{"recycle", {{"rss", 1}}}}}});
  CHECK(c.status().message() == "config.defaults.recycle.rss: unknown key");
}

TEST_CASE("config errors name the key") {
  auto c = ParseConfig({{"arena", 512}});
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == StatusCode::kInvalidConfig);
  CHECK(c.status().message() == "config.arena: unknown key");
  c = ParseConfig({{"defaults", {{"workerz", 1}}}});
  CHECK(c.status().message() == "config.defaults.workerz: unknown key");
  c = ParseConfig({{"log_level", "loud"}});
  CHECK(c.status().message() == "config.log_level: must be trace, debug, info, warn or error");
  c = ParseConfig({{"arena_mb", 1}});
  CHECK(c.status().message().find("config.arena_mb: must be between 16") == 0);
}

TEST_CASE("a config file is loaded from --config, and a malformed one is reported by path") {
  char dir[] = "/tmp/framemill-config-test-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  std::string good = std::string(dir) + "/good.json";
  std::string bad = std::string(dir) + "/bad.json";
  std::ofstream(good) << R"({"defaults": {"chunk_frames": 99}})";
  std::ofstream(bad) << R"({"defaults": )";
  auto c = LoadConfig(good);
  REQUIRE(c.ok());
  CHECK(c->defaults.chunk_frames == 99);
  c = LoadConfig(bad);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().find(bad + ": malformed JSON") == 0);
  c = LoadConfig(std::string(dir) + "/absent.json");
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().find("absent.json: cannot read") != std::string::npos);
  ::unlink(good.c_str());
  ::unlink(bad.c_str());
  ::rmdir(dir);
}

TEST_CASE("config/framemill.json parses and equals the built-in defaults") {
  auto file = LoadConfig(std::string(FRAMEMILL_SOURCE_DIR) + "/config/framemill.json");
  REQUIRE(file.ok());
  framemill::Config builtin;
  CHECK(file->defaults.chunk_frames == builtin.defaults.chunk_frames);
  CHECK(file->defaults.segment_seconds == builtin.defaults.segment_seconds);
  CHECK(file->defaults.workers == builtin.defaults.workers);
  CHECK(file->defaults.batch == builtin.defaults.batch);
  CHECK(file->defaults.device == builtin.defaults.device);
  CHECK(file->defaults.precision == builtin.defaults.precision);
  CHECK(file->defaults.color_conversion == builtin.defaults.color_conversion);
  CHECK(file->defaults.model_optimization == builtin.defaults.model_optimization);
  CHECK(file->defaults.encoders == builtin.defaults.encoders);
  CHECK(file->defaults.gpus == builtin.defaults.gpus);
  CHECK(file->defaults.workers_per_gpu == builtin.defaults.workers_per_gpu);
  CHECK(file->defaults.max_attempts == builtin.defaults.max_attempts);
  CHECK(file->defaults.tile == builtin.defaults.tile);
  CHECK(file->defaults.encoder.codec == builtin.defaults.encoder.codec);
  CHECK(file->defaults.encoder.crf == builtin.defaults.encoder.crf);
  CHECK(file->defaults.encoder.preset == builtin.defaults.encoder.preset);
  CHECK(file->defaults.encoder.pix_fmt == builtin.defaults.encoder.pix_fmt);
  CHECK(file->defaults.hang_timeout_s == builtin.defaults.hang_timeout_s);
  CHECK(file->defaults.recycle.gpu_reserved_mb == builtin.defaults.recycle.gpu_reserved_mb);
  CHECK(file->defaults.recycle.rss_mb == builtin.defaults.recycle.rss_mb);
  CHECK(file->defaults.recycle.max_chunks == builtin.defaults.recycle.max_chunks);
  CHECK(file->defaults.recycle.jitter == builtin.defaults.recycle.jitter);
  CHECK(file->defaults.recycle.warm_standby == builtin.defaults.recycle.warm_standby);
  CHECK(file->defaults.kill.gpu_reserved_mb == builtin.defaults.kill.gpu_reserved_mb);
  CHECK(file->defaults.kill.rss_mb == builtin.defaults.kill.rss_mb);
  CHECK(file->defaults.kill.grace_s == builtin.defaults.kill.grace_s);
  CHECK(file->pytorch_alloc_conf == builtin.pytorch_alloc_conf);
  CHECK(file->arena_mb == builtin.arena_mb);
  CHECK(file->worker_start_timeout_s == builtin.worker_start_timeout_s);
  CHECK(file->log_level == builtin.log_level);
  CHECK(file->max_job_starts == builtin.max_job_starts);
  CHECK(file->admin_group == builtin.admin_group);
  CHECK(file->failed_work_keep_days == builtin.failed_work_keep_days);
  CHECK(file->max_frame_pixels == builtin.max_frame_pixels);
  CHECK(file->max_job_frames == builtin.max_job_frames);
  CHECK(file->allow_any_path == builtin.allow_any_path);
  CHECK(file->allow_playlist_inputs == builtin.allow_playlist_inputs);
  CHECK(file->decoder_restarts == builtin.decoder_restarts);
  CHECK(file->crash_retries == builtin.crash_retries);
  CHECK(file->metrics_textfile == builtin.metrics_textfile);
  // Unlike the built-in defaults (for `framemill run`), the packaged config names roots, so that
  // the service it starts is confined (serve refuses to start without).
  CHECK(file->allowed_input_roots == std::vector<std::string>{"/srv/framemill/in"});
  CHECK(file->allowed_output_roots == std::vector<std::string>{"/srv/framemill/out"});
  CHECK(file->allowed_model_roots == std::vector<std::string>{"/srv/framemill/models"});
  CHECK_FALSE(file->allow_any_path);
}

TEST_CASE("the service keys parse with their ranges") {
  auto c = ParseConfig(nlohmann::json{{"allow_any_path", true},
                                      {"max_job_starts", 5},
                                      {"admin_group", ""},
                                      {"failed_work_keep_days", 0}});
  REQUIRE(c.ok());
  CHECK(c->allow_any_path);
  CHECK(c->max_job_starts == 5);
  CHECK(c->admin_group.empty());
  CHECK(c->failed_work_keep_days == 0);
  CHECK_FALSE(ParseConfig(nlohmann::json{{"max_job_starts", 0}}).ok());
  CHECK_FALSE(ParseConfig(nlohmann::json{{"allow_any_path", "yes"}}).ok());
}

TEST_CASE("config/job.example.json is a valid job") {
  auto job = framemill::LoadJobFile(std::string(FRAMEMILL_SOURCE_DIR) + "/config/job.example.json",
                                    framemill::JobSettings{});
  REQUIRE(job.ok());
  CHECK(job->settings.chunk_frames == 64);
}

TEST_CASE("gpus spread workers: workers_per_gpu sets the count, a job's own workers wins") {
  framemill::JobSettings s;
  REQUIRE(framemill::ReadJobSettings({{"device", "cuda"}, {"gpus", {0, 1}}, {"workers_per_gpu", 3}},
                                     "job", StatusCode::kInvalidJob, &s)
              .ok());
  CHECK(s.gpus == std::vector<int>{0, 1});
  CHECK(s.workers == 6);
  // A job over those defaults that sets only its worker count keeps it.
  framemill::JobSettings job = s;
  REQUIRE(framemill::ReadJobSettings({{"workers", 2}}, "job", StatusCode::kInvalidJob, &job).ok());
  CHECK(job.workers == 2);
  // ...and one that lists other GPUs gets workers_per_gpu of them.
  job = s;
  REQUIRE(framemill::ReadJobSettings({{"gpus", {3}}}, "job", StatusCode::kInvalidJob, &job).ok());
  CHECK(job.workers == 3);
}

TEST_CASE("bad gpus settings are refused with the key named") {
  auto fails = [](const json& j) {
    framemill::JobSettings s;
    framemill::Status st = framemill::ReadJobSettings(j, "job", StatusCode::kInvalidJob, &s);
    return st.ok() ? std::string() : st.message();
  };
  CHECK(fails({{"gpus", {0, 0}}}).find("job.gpus") != std::string::npos);
  CHECK(fails({{"gpus", {-1}}}).find("job.gpus") != std::string::npos);
  CHECK(fails({{"gpus", "0,1"}}).find("job.gpus") != std::string::npos);
  CHECK(fails({{"device", "cpu"}, {"gpus", {0}}}).find("needs device cuda") != std::string::npos);
  CHECK(fails({{"device", "cuda"}, {"gpus", {0}}, {"workers", 2}, {"workers_per_gpu", 2}})
            .find("not both") != std::string::npos);
  CHECK(fails({{"color_conversion", "quick"}}).find("job.color_conversion") != std::string::npos);
  CHECK(fails({{"color_conversion", "fast"}}).empty());
  CHECK(fails({{"color_conversion", "device"}}).empty());
  CHECK(fails({{"color_conversion", "auto"}}).empty());
  CHECK(fails({{"model_optimization", "fast"}}).find("job.model_optimization") !=
        std::string::npos);
  CHECK(fails({{"model_optimization", "off"}}).empty());
  CHECK(fails({{"model_optimization", "on"}}).empty());
  CHECK(fails({{"cudnn_autotune", "yes"}}).find("job.cudnn_autotune") != std::string::npos);
  CHECK(fails({{"cudnn_autotune", true}}).empty());
  CHECK(fails({{"page_lock_arena", true}}).find("job.page_lock_arena") != std::string::npos);
  CHECK(fails({{"page_lock_arena", "always"}}).find("auto, on or off") != std::string::npos);
  CHECK(fails({{"page_lock_arena", "on"}}).empty());
  CHECK(fails({{"live_mux", "on"}}).find("job.live_mux") != std::string::npos);
  CHECK(fails({{"live_mux", false}}).empty());
  CHECK(fails({{"page_lock_arena", "off"}}).empty());
  CHECK(fails({{"page_lock_arena", "auto"}}).empty());
}

TEST_CASE("metrics_textfile: a .prom file, relative to the spool by default, \"\" for none") {
  CHECK(framemill::Config{}.metrics_textfile == "metrics/framemill.prom");
  auto c = ParseConfig({{"metrics_textfile", ""}});
  REQUIRE(c.ok());
  CHECK(c->metrics_textfile.empty());
  c = ParseConfig({{"metrics_textfile", "/var/lib/prometheus/node-exporter/framemill.prom"}});
  REQUIRE(c.ok());
  CHECK(c->metrics_textfile == "/var/lib/prometheus/node-exporter/framemill.prom");
  for (const char* bad : {"metrics.txt", ".prom", "metrics/"}) {
    CAPTURE(bad);
    c = ParseConfig({{"metrics_textfile", bad}});
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().message().find("metrics_textfile") != std::string::npos);
  }
}

TEST_CASE("backend: local by default, slurm with its part count and options, anything else named") {
  auto local = ParseConfig(json::object());
  REQUIRE(local.ok());
  CHECK(local->backend == framemill::Backend::kLocal);
  auto slurm = ParseConfig(json{{"backend", "slurm"},
                                {"slurm_parts", 8},
                                {"slurm_options", {"--partition=gpu"}},
                                {"slurm_poll_s", 0.5}});
  REQUIRE(slurm.ok());
  CHECK(slurm->backend == framemill::Backend::kSlurm);
  CHECK(std::string(Name(slurm->backend)) == "slurm");
  CHECK(slurm->slurm_parts == 8);
  CHECK(slurm->slurm_options == std::vector<std::string>{"--partition=gpu"});
  auto bad = ParseConfig(json{{"backend", "kubernetes"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("backend") != std::string::npos);
  CHECK_FALSE(ParseConfig(json{{"slurm_parts", 0}}).ok());
}

TEST_CASE("service_gpus: none by default, a list of GPUs, each once") {
  auto none = ParseConfig(json::object());
  REQUIRE(none.ok());
  CHECK(none->service_gpus.empty());
  auto four = ParseConfig(json{{"service_gpus", {3, 0, 1, 2}}});
  REQUIRE(four.ok());
  CHECK(four->service_gpus == std::vector<int>{3, 0, 1, 2});
  auto twice = ParseConfig(json{{"service_gpus", {0, 1, 0}}});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find("service_gpus") != std::string::npos);
  CHECK(twice.status().message().find("0 is listed twice") != std::string::npos);
  CHECK_FALSE(ParseConfig(json{{"service_gpus", {-1}}}).ok());
  CHECK_FALSE(ParseConfig(json{{"service_gpus", "0,1"}}).ok());
}

TEST_CASE("spare_workers: on by default, a bool") {
  auto none = ParseConfig(json::object());
  REQUIRE(none.ok());
  CHECK(none->spare_workers);
  auto off = ParseConfig(json{{"spare_workers", false}});
  REQUIRE(off.ok());
  CHECK_FALSE(off->spare_workers);
  CHECK_FALSE(ParseConfig(json{{"spare_workers", "yes"}}).ok());
}
