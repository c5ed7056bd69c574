#include <cstdint>
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/shm_validate.h"

using namespace framemill;

namespace {

const std::vector<HeldChunk> kHeld = {{7, 2, 32}, {8, 3, 17}};

ChunkResult GoodResult() {
  ChunkResult r{};
  r.chunk_id = 8;
  r.slot = 3;
  r.frames_done = 17;
  r.busy_us = 1500;
  return r;
}

ArenaGeometry GoodGeometry() {
  ArenaGeometry g;
  g.slot_count = 4;
  g.chunk_frames = 8;
  g.in_width = 64;
  g.in_height = 48;
  g.out_width = 128;
  g.out_height = 96;
  g.slot_bytes = AlignUp((g.InFrameBytes() + g.OutFrameBytes()) * 8, kSlotAlignment);
  g.data_offset = kSlotAlignment;
  g.total_bytes = g.data_offset + g.slot_count * g.slot_bytes;
  return g;
}

}  // namespace

TEST_CASE("shm validate: a good result names its chunk's index") {
  size_t index = 99;
  CHECK(ValidateChunkResult(GoodResult(), kHeld, &index).ok());
  CHECK(index == 1);
  ChunkResult failed = GoodResult();
  failed.error = 1;
  failed.frames_done = 3;
  CopyString(failed.message, "out of memory");
  CHECK(ValidateChunkResult(failed, kHeld, &index).ok());
}

TEST_CASE("shm validate: a result that lies about its chunk is refused") {
  ChunkResult r = GoodResult();
  std::string expect;
  SUBCASE("a chunk the worker does not hold") {
    r.chunk_id = 9;
    expect = "does not hold";
  }
  SUBCASE("another chunk's slot") {
    r.slot = 2;
    expect = "not its slot";
  }
  SUBCASE("a slot far out of the arena") {
    r.slot = UINT32_MAX;
    expect = "not its slot";
  }
  SUBCASE("more frames than the chunk has") {
    r.frames_done = 18;
    expect = "frames done";
  }
  SUBCASE("fewer frames with no error") {
    r.frames_done = 16;
    expect = "no error";
  }
  SUBCASE("an error code that is neither 0 nor 1") {
    r.error = -1;
    expect = "error code";
  }
  SUBCASE("a message without its NUL") {
    std::memset(r.message, 'x', sizeof(r.message));
    expect = "unterminated";
  }
  SUBCASE("an impossible busy time") {
    r.busy_us = UINT64_MAX;
    expect = "us of work";
  }
  size_t index = 0;
  Status s = ValidateChunkResult(r, kHeld, &index);
  CHECK_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kWorkerFailed);
  CHECK(s.message().find(expect) != std::string::npos);
}

TEST_CASE("shm validate: a result image of the wrong size is refused, a right one checked") {
  ChunkResult out{};
  size_t index = 0;
  ChunkResult r = GoodResult();
  std::vector<uint8_t> bytes(sizeof(r));
  std::memcpy(bytes.data(), &r, sizeof(r));
  CHECK(ValidateChunkResultBytes(bytes.data(), bytes.size(), kHeld, &out, &index).ok());
  CHECK(out.chunk_id == 8);
  CHECK_FALSE(ValidateChunkResultBytes(bytes.data(), bytes.size() - 1, kHeld, &out, &index).ok());
  std::vector<uint8_t> ff(sizeof(r), 0xff);
  CHECK_FALSE(ValidateChunkResultBytes(ff.data(), ff.size(), kHeld, &out, &index).ok());
}

TEST_CASE("shm validate: worker states outside the enum are refused") {
  for (uint32_t s = 0; s <= kLastWorkerState; ++s) CHECK(ValidateWorkerState(s).ok());
  CHECK(*ValidateWorkerState(2) == WorkerState::kReady);
  CHECK_FALSE(ValidateWorkerState(kLastWorkerState + 1).ok());
  CHECK_FALSE(ValidateWorkerState(0xffffffffu).ok());
}

TEST_CASE("shm validate: probe sizes are bounded and the device name is terminated and printable") {
  char device[kDeviceBytes] = "cuda:0";
  Result<ProbeReport> p = ValidateProbe(128, 128, device, sizeof(device));
  REQUIRE(p.ok());
  CHECK(p->device == "cuda:0");
  CHECK_FALSE(ValidateProbe(0, 64, device, sizeof(device)).ok());
  CHECK_FALSE(ValidateProbe(64, kMaxProbeOutput + 1, device, sizeof(device)).ok());
  CHECK_FALSE(ValidateProbe(UINT32_MAX, UINT32_MAX, device, sizeof(device)).ok());
  // The bound follows the probe's input: a package made for 1920x1080 reports its output for it.
  CHECK(ValidateProbe(3840, 2160, device, sizeof(device), 1920, 1080).ok());
  CHECK(ValidateProbe(1920 * kMaxModelScale, 1080, device, sizeof(device), 1920, 1080).ok());
  CHECK_FALSE(ValidateProbe(1920 * kMaxModelScale + 1, 1080, device, sizeof(device), 1920, 1080)
                  .ok());
  CHECK_FALSE(ValidateProbe(3840, 1080 * kMaxModelScale + 1, device, sizeof(device), 1920, 1080)
                  .ok());
  char unterminated[kDeviceBytes];
  std::memset(unterminated, 'a', sizeof(unterminated));
  CHECK_FALSE(ValidateProbe(64, 64, unterminated, sizeof(unterminated)).ok());
  char empty[kDeviceBytes] = "";
  CHECK_FALSE(ValidateProbe(64, 64, empty, sizeof(empty)).ok());
  char binary[kDeviceBytes] = "cpu\x1b[2J";
  Result<ProbeReport> b = ValidateProbe(64, 64, binary, sizeof(binary));
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().message().find("\\x1b") != std::string::npos);  // escaped in the message
}

TEST_CASE(
    "shm validate: telemetry from the future, running backwards or beyond memory is refused") {
  TelemetrySnapshot prev;
  prev.heartbeat_ms = 1000;
  prev.frames_done = 50;
  prev.chunks_done = 2;
  TelemetrySnapshot now = prev;
  now.heartbeat_ms = 1900;
  now.rss_bytes = 1ull << 30;
  CHECK(ValidateTelemetry(now, prev, 2000).ok());
  CHECK(ValidateTelemetry(now, prev, 1900 - kHeartbeatSlackMs).ok());  // a little ahead: fine
  TelemetrySnapshot bad = now;
  SUBCASE("heartbeat ahead of the clock") { bad.heartbeat_ms = UINT64_MAX; }
  SUBCASE("heartbeat backwards") { bad.heartbeat_ms = 999; }
  SUBCASE("frames backwards") { bad.frames_done = 49; }
  SUBCASE("chunks backwards") { bad.chunks_done = 1; }
  SUBCASE("rss beyond any memory") { bad.rss_bytes = kMaxPlausibleBytes + 1; }
  SUBCASE("gpu bytes of 0xff") { bad.gpu_reserved_bytes = UINT64_MAX; }
  CHECK_FALSE(ValidateTelemetry(bad, prev, 2000).ok());
}

TEST_CASE("shm validate: an arena geometry must fit its mapping") {
  ArenaGeometry g = GoodGeometry();
  CHECK(ValidateArenaGeometry(g, g.total_bytes).ok());
  CHECK_FALSE(ValidateArenaGeometry(g, g.total_bytes - 1).ok());
  ArenaGeometry bad = g;
  SUBCASE("no slots") { bad.slot_count = 0; }
  SUBCASE("slots that overflow 64 bits") {
    bad.slot_count = UINT32_MAX;
    bad.slot_bytes = UINT64_MAX / 2;
  }
  SUBCASE("a slot smaller than its frames") { bad.slot_bytes = 4096; }
  SUBCASE("slots over the header") { bad.data_offset = 0; }
  SUBCASE("an unknown format") { bad.in_format = static_cast<FrameFormat>(7); }
  SUBCASE("an unknown matrix") { bad.in_matrix = static_cast<YuvMatrix>(99); }
  SUBCASE("a frame side of 0xffffffff") { bad.out_width = UINT32_MAX; }
  SUBCASE("a range flag of 2") { bad.in_full_range = 2; }
  SUBCASE("an unknown output format") { bad.out_format = static_cast<FrameFormat>(9); }
  SUBCASE("YUV as the output format") { bad.out_format = FrameFormat::kYuv420p; }
  CHECK_FALSE(ValidateArenaGeometry(bad, UINT64_MAX).ok());
}

TEST_CASE("shm validate: yuv420p output needs yuv420p input, whole frames and an even size") {
  ArenaGeometry g = GoodGeometry();
  g.in_format = g.out_format = FrameFormat::kYuv420p;  // smaller than the rgb24 slots
  CHECK(ValidateArenaGeometry(g, UINT64_MAX).ok());
  ArenaGeometry bad = g;
  SUBCASE("rgb24 input") { bad.in_format = FrameFormat::kRgb24; }
  SUBCASE("an odd width") { bad.out_width = 127; }
  SUBCASE("an odd height") { bad.out_height = 95; }
  SUBCASE("faces") {
    bad.face_slots = 1;
    bad.face_size = 32;
  }
  CHECK_FALSE(ValidateArenaGeometry(bad, UINT64_MAX).ok());
}

TEST_CASE("shm validate: face fields are bounded, need the output at the input's size, and room") {
  ArenaGeometry g = GoodGeometry();
  g.out_width = g.in_width;
  g.out_height = g.in_height;
  g.face_slots = 4;
  g.face_size = 256;
  g.face_blend = 16;
  g.slot_bytes = AlignUp(g.FacesOffset() + g.FacesBytes(), kSlotAlignment);
  g.total_bytes = g.data_offset + g.slot_count * g.slot_bytes;
  CHECK(ValidateArenaGeometry(g, g.total_bytes).ok());
  ArenaGeometry edge = g;
  edge.face_slots = kMaxFacesPerFrame;
  edge.face_size = kMaxFaceSize;
  edge.face_blend = kMaxFaceSize / 2;
  edge.slot_bytes = AlignUp(edge.FacesOffset() + edge.FacesBytes(), kSlotAlignment);
  edge.total_bytes = edge.data_offset + edge.slot_count * edge.slot_bytes;
  CHECK(ValidateArenaGeometry(edge, edge.total_bytes).ok());
  edge.face_size = kMinFaceSize;
  edge.face_blend = 0;
  CHECK(ValidateArenaGeometry(edge, edge.total_bytes).ok());

  ArenaGeometry bad = g;
  std::string expect;
  SUBCASE("more face slots than a frame may carry") {
    bad.face_slots = kMaxFacesPerFrame + 1;
    expect = "face_slots 17";
  }
  SUBCASE("a face size below the smallest") {
    bad.face_size = kMinFaceSize - 1;
    expect = "face_size 31";
  }
  SUBCASE("a face size above the largest") {
    bad.face_size = kMaxFaceSize + 1;
    expect = "face_size 2049";
  }
  SUBCASE("a feather wider than half the crop") {
    bad.face_blend = 129;
    expect = "face_blend 129";
  }
  SUBCASE("an output of another size") {
    bad.out_width = 2 * bad.in_width;
    expect = "another size";
  }
  SUBCASE("a face size in whole-frame mode") {
    bad.face_slots = 0;
    expect = "without face slots";
  }
  SUBCASE("an unknown flag") {
    bad.flags = kArenaPageLock | 2;
    expect = "unknown flags";
  }
  SUBCASE("no room for the warps") {
    bad.slot_bytes = AlignUp(bad.FacesOffset() + bad.FacesBytes(), 64) - 32;
    bad.total_bytes = bad.data_offset + bad.slot_count * bad.slot_bytes;
    expect = "smaller than its frames";
  }
  SUBCASE("so many frames that the warps' offset would overflow") {
    bad.chunk_frames = UINT32_MAX;
    bad.in_width = bad.out_width = kMaxFrameSide;
    bad.in_height = bad.out_height = kMaxFrameSide;
    expect = "smaller than its frames";
  }
  Status s = ValidateArenaGeometry(bad, UINT64_MAX);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find(expect) != std::string::npos);
}

TEST_CASE("shm validate: 16-bit frames need twice the room of 8-bit ones") {
  ArenaGeometry g = GoodGeometry();
  g.in_format = FrameFormat::kRgb48;
  g.out_format = FrameFormat::kRgb48;
  CHECK(g.InFrameBytes() == size_t{g.in_width} * g.in_height * 6);
  CHECK(g.OutFrameBytes() == size_t{g.out_width} * g.out_height * 6);
  const uint64_t need = (g.InFrameBytes() + g.OutFrameBytes()) * g.chunk_frames;
  g.slot_bytes = need - 1;  // big enough for 8-bit frames, one byte short for 16-bit ones
  g.total_bytes = g.data_offset + g.slot_bytes * g.slot_count;
  CHECK_FALSE(ValidateArenaGeometry(g, g.total_bytes).ok());
  g.slot_bytes = AlignUp(need, kSlotAlignment);
  g.total_bytes = g.data_offset + g.slot_bytes * g.slot_count;
  CHECK(ValidateArenaGeometry(g, g.total_bytes).ok());
}

TEST_CASE("shm validate: text for logs escapes every byte that is not printable ASCII") {
  char text[8] = {'o', 'k', '\n', '\xff', 'z', 'z', 'z', 'z'};
  CHECK(PrintableText(text, sizeof(text)) == "ok\\x0a\\xffzzzz");  // unterminated: cut at 8
  char short_text[8] = "abc";
  CHECK(PrintableText(short_text, sizeof(short_text)) == "abc");
}
