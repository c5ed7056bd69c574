// The protocol's lifecycle (common/shm_protocol.h): how big a job's arena is, and that what the
// create paths write passes the checks a worker applies (common/shm_validate.h), while each
// corrupted field fails them with its reason.
#include <cstdint>
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "common/shm_protocol.h"
#include "common/shm_validate.h"

using namespace framemill;

namespace {

// 64x48 in, 128x96 out, 8 frames a chunk. Frame bytes: rgb24 9,216, rgb48 18,432, yuv420p 4,608
// in; rgb24 36,864 out. Slots: (in + out) * 8, already multiples of kSlotAlignment.
constexpr uint64_t kSlotRgb24 = (9216 + 36864) * 8;   // 368,640
constexpr uint64_t kSlotRgb48 = (18432 + 36864) * 8;  // 442,368
constexpr uint64_t kSlotYuv = (4608 + 36864) * 8;     // 331,776

ArenaGeometry Shape(FrameFormat in_format = FrameFormat::kRgb24) {
  ArenaGeometry g;
  g.chunk_frames = 8;
  g.in_width = 64;
  g.in_height = 48;
  g.in_format = in_format;
  g.out_width = 128;
  g.out_height = 96;
  g.out_format = FrameFormat::kRgb24;
  return g;
}

ArenaDemand Demand(int workers, int encoders = 1, int64_t chunks_per_segment = 1) {
  ArenaDemand d;
  d.workers = workers;
  d.encoders = encoders;
  d.chunks_per_segment = chunks_per_segment;
  d.chunks = 1000;
  d.arena_mb = 4096;
  return d;
}

uint32_t Slots(const ArenaGeometry& shape, const ArenaDemand& demand) {
  Result<ArenaGeometry> g = SizeArena(shape, demand);
  REQUIRE(g.ok());
  return g->slot_count;
}

}  // namespace

TEST_CASE("shm protocol: a slot holds a chunk's input and output frames, aligned") {
  Result<ArenaGeometry> g = SizeArena(Shape(), Demand(2));
  REQUIRE(g.ok());
  CHECK(g->slot_bytes == kSlotRgb24);
  CHECK(g->data_offset == kSlotAlignment);  // the header, rounded up to one alignment
  CHECK(g->total_bytes == g->data_offset + g->slot_count * g->slot_bytes);
  // The shape's own fields pass through unchanged.
  CHECK(g->chunk_frames == 8);
  CHECK(g->in_width == 64);
  CHECK(g->out_height == 96);
  CHECK(ValidateArenaGeometry(*g, g->total_bytes).ok());

  ArenaGeometry odd = Shape();
  odd.chunk_frames = 3;  // (9,216 + 36,864) * 3 = 138,240: rounded up to 34 * 4,096
  Result<ArenaGeometry> rounded = SizeArena(odd, Demand(1));
  REQUIRE(rounded.ok());
  CHECK(rounded->slot_bytes == 34 * kSlotAlignment);
}

TEST_CASE("shm protocol: the input format sets the slot size") {
  struct Case {
    FrameFormat format;
    uint64_t slot;
  };
  for (const Case& c :
       {Case{FrameFormat::kRgb24, kSlotRgb24}, Case{FrameFormat::kRgb48, kSlotRgb48},
        Case{FrameFormat::kYuv420p, kSlotYuv}}) {
    CAPTURE(FrameFormatName(c.format));
    Result<ArenaGeometry> g = SizeArena(Shape(c.format), Demand(1));
    REQUIRE(g.ok());
    CHECK(g->slot_bytes == c.slot);
  }
  // 16-bit output needs twice the room of 8-bit output.
  ArenaGeometry deep = Shape();
  deep.out_format = FrameFormat::kRgb48;
  Result<ArenaGeometry> g = SizeArena(deep, Demand(1));
  REQUIRE(g.ok());
  CHECK(g->slot_bytes == (9216 + 2 * 36864) * 8);
}

TEST_CASE("shm protocol: in face mode a slot holds its frames' FaceWarps after them, aligned") {
  // 33x17 rgb24 in and out, 3 frames: 2 * 1,683 * 3 = 10,098 bytes of frames, which leaves the
  // warps' start to the alignment (10,112); 3 frames * 5 slots * 32 bytes of warps after it.
  ArenaGeometry faces = Shape();
  faces.chunk_frames = 3;
  faces.in_width = faces.out_width = 33;
  faces.in_height = faces.out_height = 17;
  faces.face_slots = 5;
  faces.face_size = 256;
  faces.face_blend = 16;
  Result<ArenaGeometry> g = SizeArena(faces, Demand(1));
  REQUIRE(g.ok());
  CHECK(g->FacesOffset() == 10112);
  CHECK(g->FacesOffset() % alignof(FaceWarp) == 0);
  CHECK(g->FacesBytes() == 3 * 5 * sizeof(FaceWarp));
  CHECK(g->slot_bytes == 3 * kSlotAlignment);  // 10,112 + 480 bytes, rounded up
  CHECK(g->face_slots == 5);
  CHECK(ValidateArenaGeometry(*g, g->total_bytes).ok());
  // The warps of a slot lie after its output frames and end inside it.
  Result<SharedMemory> arena = CreateFrameArena(*g);
  REQUIRE(arena.ok());
  auto* base = static_cast<uint8_t*>(arena->data());
  for (uint32_t slot = 0; slot < g->slot_count; ++slot) {
    const auto* warps = reinterpret_cast<const uint8_t*>(g->SlotFaces(base, slot));
    CHECK(warps >= g->SlotOut(base, slot) + g->OutFrameBytes() * g->chunk_frames);
    CHECK(warps + g->FacesBytes() <= g->SlotIn(base, slot) + g->slot_bytes);
  }
  const auto* last = reinterpret_cast<const uint8_t*>(g->SlotFaces(base, g->slot_count - 1));
  CHECK(last + g->FacesBytes() <= base + arena->size());

  // The most warps a frame may carry: 8 frames of 16, a page of them after the frames.
  ArenaGeometry many = Shape();
  many.out_width = many.in_width;
  many.out_height = many.in_height;
  many.chunk_frames = 8;
  many.face_slots = kMaxFacesPerFrame;
  many.face_size = 512;
  Result<ArenaGeometry> m = SizeArena(many, Demand(1));
  REQUIRE(m.ok());
  CHECK(m->slot_bytes == AlignUp(2 * 9216 * 8 + 8 * 16 * 32, kSlotAlignment));
}

TEST_CASE("shm protocol: slots for the workers' chunks in flight, the spares and the encoders") {
  const uint32_t spare = static_cast<uint32_t>(kArenaSpareSlots);
  CHECK(Slots(Shape(), Demand(1)) == 1 * kInflightPerWorker + spare);
  CHECK(Slots(Shape(), Demand(2)) == 2 * kInflightPerWorker + spare);
  CHECK(Slots(Shape(), Demand(4)) == 4 * kInflightPerWorker + spare);
  // One encoder takes segments one by one: no room of its own.
  CHECK(Slots(Shape(), Demand(2, 1, 4)) == 2 * kInflightPerWorker + spare);
  // Several encoders: each one's whole segment waits in the arena.
  CHECK(Slots(Shape(), Demand(2, 2, 4)) == 2 * kInflightPerWorker + spare + 2 * 4);
  CHECK(Slots(Shape(), Demand(4, 4, 3)) == 4 * kInflightPerWorker + spare + 4 * 3);
  // Never more than the plan's chunks and one.
  ArenaDemand short_job = Demand(4, 4, 3);
  short_job.chunks = 5;
  CHECK(Slots(Shape(), short_job) == 6);
  // Uncapped, the arena gets exactly what the pipeline wants.
  CHECK(ArenaSlotsWanted(Demand(4, 4, 3)) == Slots(Shape(), Demand(4, 4, 3)));
  CHECK(ArenaSlotsWanted(short_job) == 6);
}

TEST_CASE("shm protocol: a kept arena serves a job of the same frames and no more slots") {
  ArenaDemand long_job = Demand(1);
  ArenaDemand short_job = Demand(1);
  short_job.chunks = 1;  // two slots: the plan's chunk and one
  Result<ArenaGeometry> big = SizeArena(Shape(), long_job);
  Result<ArenaGeometry> small = SizeArena(Shape(), short_job);
  REQUIRE(big.ok());
  REQUIRE(small.ok());
  REQUIRE(small->slot_count < big->slot_count);
  CHECK(ArenaHolds(*big, *big));
  CHECK(ArenaHolds(*big, *small));         // a shorter job uses some of its slots
  CHECK_FALSE(ArenaHolds(*small, *big));   // a longer one wants more than it has
  CHECK_FALSE(SameArenaGeometry(*big, *small));
  // Any other frame, format or face field: not the same slots.
  auto differs = [&](auto change) {
    ArenaGeometry shape = Shape();
    change(&shape);
    Result<ArenaGeometry> other = SizeArena(shape, short_job);
    REQUIRE(other.ok());
    return !ArenaHolds(*big, *other);
  };
  CHECK(differs([](ArenaGeometry* g) { g->chunk_frames = 4; }));
  CHECK(differs([](ArenaGeometry* g) { g->in_width = 32; }));
  CHECK(differs([](ArenaGeometry* g) { g->out_height = 48; }));
  CHECK(differs([](ArenaGeometry* g) { g->in_format = FrameFormat::kYuv420p; }));
  CHECK(differs([](ArenaGeometry* g) { g->in_full_range = 1; }));
  CHECK(differs([](ArenaGeometry* g) { g->face_slots = 2; }));
  // The flags are a job's, not the arena's: a kept arena serves a job that page-locks, and back.
  ArenaGeometry locking = *small;
  locking.flags = kArenaPageLock;
  CHECK(ArenaHolds(*big, locking));
  ArenaGeometry locked = *big;
  locked.flags = kArenaPageLock;
  CHECK(ArenaHolds(locked, *small));
  CHECK_FALSE(SameArenaGeometry(locked, *big));
}

TEST_CASE("shm protocol: page-locking pays when a job moves its arena's bytes 20 times over") {
  ArenaGeometry g = Shape(FrameFormat::kRgb24);  // 64x48 -> 128x96: 9,216 + 36,864 bytes a frame
  g.total_bytes = 46080 * 100;                    // the bytes of 100 frames, in and out
  CHECK_FALSE(WorthPageLocking(g, 0));
  CHECK_FALSE(WorthPageLocking(g, 1999));
  CHECK(WorthPageLocking(g, 2000));
  // No overflow for the largest sizes: 2^18 x 2^18 frames, 16-bit, a billion of them.
  ArenaGeometry huge = g;
  huge.in_width = huge.in_height = huge.out_width = huge.out_height = 1u << 18;
  huge.out_format = FrameFormat::kRgb48;
  huge.total_bytes = ~uint64_t{0};
  CHECK(WorthPageLocking(huge, uint64_t{1} << 30));
  CHECK_FALSE(WorthPageLocking(huge, 1));
}

TEST_CASE("shm protocol: arena_mb caps the slots, and below two slots the job is refused") {
  ArenaDemand d = Demand(4);
  // 1 MiB: 1,048,576 bytes.
  d.arena_mb = 1;
  CHECK(Slots(Shape(FrameFormat::kRgb24), d) == 1048576 / kSlotRgb24);  // 2
  // Fewer than the pipeline wants: the job runner warns (the decoder will wait for the encoders).
  CHECK(ArenaSlotsWanted(d) == 4 * kInflightPerWorker + kArenaSpareSlots);
  CHECK(Slots(Shape(FrameFormat::kRgb48), d) == 1048576 / kSlotRgb48);  // 2
  CHECK(Slots(Shape(FrameFormat::kYuv420p), d) == 1048576 / kSlotYuv);  // 3
  // The header is not counted in the budget.
  Result<ArenaGeometry> g = SizeArena(Shape(), d);
  REQUIRE(g.ok());
  CHECK(g->total_bytes == kSlotAlignment + 2 * kSlotRgb24);

  ArenaGeometry big = Shape(FrameFormat::kRgb48);
  big.chunk_frames = 32;  // 32 * 55,296 = 1,769,472 bytes a slot: not one fits in 1 MiB
  Result<ArenaGeometry> refused = SizeArena(big, d);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidJob);
  CHECK(refused.status().message() ==
        "arena_mb=1 holds fewer than 2 chunks of 32 frames at 64x48 -> 128x96 (1 MiB each): "
        "lower chunk_frames or raise arena_mb");
  d.arena_mb = 3;  // one slot of 1.69 MiB: still refused
  CHECK_FALSE(SizeArena(big, d).ok());
  d.arena_mb = 4;  // two
  CHECK(SizeArena(big, d).ok());

  ArenaGeometry empty = Shape();
  empty.chunk_frames = 0;
  Result<ArenaGeometry> none = SizeArena(empty, Demand(1));
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == StatusCode::kInternal);
}

TEST_CASE("shm protocol: a created arena has its header and passes the geometry check") {
  Result<ArenaGeometry> g = SizeArena(Shape(FrameFormat::kYuv420p), Demand(2));
  REQUIRE(g.ok());
  Result<SharedMemory> arena = CreateFrameArena(*g);
  REQUIRE(arena.ok());
  CHECK(arena->name().find("/arena-") != std::string::npos);
  CHECK(arena->size() == g->total_bytes);
  const auto* header = static_cast<const ArenaHeader*>(arena->data());
  CHECK(header->magic == kArenaMagic);
  CHECK(header->version == kProtocolVersion);
  CHECK(header->header_bytes == sizeof(ArenaHeader));
  CHECK(header->geometry.slot_count == g->slot_count);
  CHECK(header->geometry.in_format == FrameFormat::kYuv420p);
  // What a worker checks when it maps the arena: the geometry against the mapping's size.
  CHECK(ValidateArenaGeometry(header->geometry, arena->size()).ok());

  // An arena that would not pass that check is not created.
  ArenaGeometry bad = *g;
  bad.total_bytes -= 1;
  Result<SharedMemory> refused = CreateFrameArena(bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInternal);
  CHECK(refused.status().message().find("slots end beyond the object") != std::string::npos);
}

TEST_CASE("shm protocol: each corrupted geometry field of a created arena fails with its reason") {
  Result<ArenaGeometry> made = SizeArena(Shape(), Demand(1));
  REQUIRE(made.ok());
  Result<SharedMemory> arena = CreateFrameArena(*made);
  REQUIRE(arena.ok());
  ArenaGeometry g = static_cast<const ArenaHeader*>(arena->data())->geometry;
  std::string expect;
  SUBCASE("slot count") {
    g.slot_count = 0;
    expect = "no slots";
  }
  SUBCASE("slot count beyond the object") {
    g.slot_count += 1;
    expect = "slots end beyond the object";
  }
  SUBCASE("frame size") {
    g.out_width = 0;
    expect = "frame size out of range";
  }
  SUBCASE("input format") {
    g.in_format = static_cast<FrameFormat>(7);
    expect = "unknown input format";
  }
  SUBCASE("output format") {
    g.out_format = FrameFormat::kYuv420p;
    expect = "yuv420p output without yuv420p input";
  }
  SUBCASE("matrix") {
    g.in_matrix = static_cast<YuvMatrix>(99);
    expect = "unknown YUV matrix";
  }
  SUBCASE("range") {
    g.in_full_range = 2;
    expect = "range flag";
  }
  SUBCASE("data offset") {
    g.data_offset = 0;
    expect = "overlap the header";
  }
  SUBCASE("slot size") {
    g.slot_bytes = 4096;
    expect = "smaller than its frames";
  }
  Status s = ValidateArenaGeometry(g, arena->size());
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find(expect) != std::string::npos);
}

TEST_CASE("shm protocol: a created control block passes the worker's check") {
  Result<SharedMemory> ctl = CreateControlBlock(5, 4242);
  REQUIRE(ctl.ok());
  CHECK(ctl->name().find("/ctl-") != std::string::npos);
  CHECK(ctl->size() == sizeof(ControlHeader));
  CHECK(ValidateControlHeader(ctl->data(), ctl->size()).ok());
  const auto* h = static_cast<const ControlHeader*>(ctl->data());
  CHECK(h->channel_index == 5);
  CHECK(h->supervisor_pid == 4242);
  CHECK(ValidateWorkerState(h->channel.state.load()).value() == WorkerState::kStarting);
  // The rings start empty both ways.
  CHECK(h->channel.requests.head.load() == 0);
  CHECK(h->channel.requests.tail.load() == 0);
  CHECK(h->channel.results.head.load() == 0);
  CHECK(h->channel.results.tail.load() == 0);
  // Opened by path, as a worker does, it passes too.
  Result<SharedMemory> opened = SharedMemory::Open(ctl->name());
  REQUIRE(opened.ok());
  CHECK(ValidateControlHeader(opened->data(), opened->size()).ok());
}

TEST_CASE("shm protocol: each corrupted control header field fails with its reason") {
  Result<SharedMemory> ctl = CreateControlBlock(0, 1);
  REQUIRE(ctl.ok());
  auto* h = static_cast<ControlHeader*>(ctl->data());
  size_t bytes = ctl->size();
  std::string expect;
  SUBCASE("magic") {
    h->magic ^= 1;
    expect = "magic is not framemill's";
  }
  SUBCASE("version") {
    h->version = kProtocolVersion - 1;
    expect = "protocol version " + std::to_string(kProtocolVersion - 1) + ", not " +
             std::to_string(kProtocolVersion);
  }
  SUBCASE("header size") {
    h->header_bytes = sizeof(ControlHeader) + 8;
    expect = "header of " + std::to_string(sizeof(ControlHeader) + 8) + " bytes";
  }
  SUBCASE("a mapping shorter than the header") {
    bytes = sizeof(ControlHeader) - 1;
    expect = "fewer than its header's";
  }
  Status s = ValidateControlHeader(h, bytes);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("control block: ") == 0);
  CHECK(s.message().find(expect) != std::string::npos);
}
