// Face mode's job keys (common/face_setting.h): read from a job and the config's defaults, each
// bad value a kInvalidJob naming its key, face mode refused without a detector or a table.
#include <doctest/doctest.h>

#include "common/config.h"
#include "common/face_setting.h"
#include "common/job_file.h"

using namespace framemill;
using nlohmann::json;

namespace {

json Job(const json& more) {
  json j = {{"input", "/in/a.mp4"}, {"output", "/out/a.mp4"}, {"model", "/m/gpen.pt"}};
  for (const auto& [k, v] : more.items()) j[k] = v;
  return j;
}

// The message of the error a job with `more` gets; it must start with "job.<key>: ".
std::string Error(const json& more, const std::string& key) {
  Result<JobSpec> r = ParseJob(Job(more), JobSettings{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidJob);
  INFO(r.status().message());
  CHECK(r.status().message().rfind("job." + key + ": ", 0) == 0);
  return r.status().message();
}

}  // namespace

TEST_CASE("face keys: frames mode by default, faces mode with every key read") {
  Result<JobSpec> plain = ParseJob(Job({}), JobSettings{});
  REQUIRE(plain.ok());
  CHECK(plain->settings.mode == JobMode::kFrames);
  CHECK(plain->settings.faces.size == 512);
  CHECK(plain->settings.faces.BlendPixels() == 32);

  Result<JobSpec> faces = ParseJob(Job({{"mode", "faces"},
                                        {"face_size", 256},
                                        {"face_margin", 0.25},
                                        {"face_min_size", 48},
                                        {"max_faces", 2},
                                        {"blend", 12},
                                        {"face_detector", "/d/blazeface.onnx"}}),
                                   JobSettings{});
  REQUIRE(faces.ok());
  const FaceSetting& f = faces->settings.faces;
  CHECK(faces->settings.mode == JobMode::kFaces);
  CHECK(f.size == 256);
  CHECK(f.margin == doctest::Approx(0.25));
  CHECK(f.min_size == 48);
  CHECK(f.max_faces == 2);
  CHECK(f.BlendPixels() == 12);
  CHECK(f.detector == "/d/blazeface.onnx");
  CHECK(f.table.empty());

  // A table alone is enough (a machine without OpenCV).
  Result<JobSpec> table =
      ParseJob(Job({{"mode", "faces"}, {"face_table", "/t/a.faces.json"}}), JobSettings{});
  REQUIRE(table.ok());
  CHECK(table->settings.faces.table == "/t/a.faces.json");
}

TEST_CASE("face keys: the config's defaults give the detector, a job overrides the size") {
  Result<Config> config =
      ParseConfig(json{{"defaults", {{"face_detector", "/d/front.onnx"}, {"face_size", 1024}}}});
  REQUIRE(config.ok());
  Result<JobSpec> job = ParseJob(Job({{"mode", "faces"}, {"face_size", 512}}), config->defaults);
  REQUIRE(job.ok());
  CHECK(job->settings.faces.detector == "/d/front.onnx");
  CHECK(job->settings.faces.size == 512);
}

TEST_CASE("face keys: bad values fail the job, naming the key") {
  CHECK(Error({{"mode", "heads"}}, "mode").find("frames or faces") != std::string::npos);
  Error({{"face_size", 16}}, "face_size");
  Error({{"face_size", 4096}}, "face_size");
  Error({{"face_size", "512"}}, "face_size");
  Error({{"face_margin", 3.0}}, "face_margin");
  Error({{"face_margin", -0.9}}, "face_margin");
  Error({{"face_min_size", 0}}, "face_min_size");
  Error({{"max_faces", 0}}, "max_faces");
  Error({{"max_faces", 17}}, "max_faces");
  Error({{"blend", -1}}, "blend");
  Error({{"face_detector", ""}}, "face_detector");
  // Face mode without a way to find faces, and a feather wider than half the crop.
  CHECK(Error({{"mode", "faces"}}, "face_detector").find("face_table") != std::string::npos);
  Error({{"mode", "faces"}, {"face_detector", "/d/x.onnx"}, {"face_size", 64}, {"blend", 40}},
        "blend");
  // In frames mode the face keys are read but not required.
  CHECK(ParseJob(Job({{"blend", 40}, {"face_size", 64}}), JobSettings{}).ok());
}

TEST_CASE("face keys: config/framemill.json gives the built-in face defaults") {
  Result<Config> file = LoadConfig(std::string(FRAMEMILL_SOURCE_DIR) + "/config/framemill.json");
  REQUIRE(file.ok());
  const JobSettings builtin;
  CHECK(file->defaults.mode == builtin.mode);
  CHECK(file->defaults.faces.size == builtin.faces.size);
  CHECK(file->defaults.faces.margin == builtin.faces.margin);
  CHECK(file->defaults.faces.min_size == builtin.faces.min_size);
  CHECK(file->defaults.faces.max_faces == builtin.faces.max_faces);
  CHECK(file->defaults.faces.blend == builtin.faces.blend);
}
