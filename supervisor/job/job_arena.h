// The frame arena (common/shm_protocol.h) and its chunk board (supervisor/plan/chunk_board.h):
// where a job's stages meet. The decoder writes input frames into a slot, the workers read them
// and write the output beside them, the encoders read the output and free the slot; the board
// says which chunk is where. ArenaPlanner sizes the arena for a job (no side effects).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/frame_format.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "common/status.h"
#include "supervisor/job/prepared_job.h"
#include "supervisor/plan/chunk_board.h"

namespace framemill {

struct JobArena {
  SharedMemory shm;
  uint8_t* base = nullptr;
  ArenaGeometry geometry;  // our own copy: the header in shared memory is never read back
  std::unique_ptr<ChunkBoard> board;
  // Given to every board made (ChunkBoard::SetFailureListener); set before the stages start.
  std::function<void(const Status&)> on_board_failure;

  // A new board over `chunks` chunks and the geometry's slots.
  void MakeBoard(int64_t chunks) {
    board = std::make_unique<ChunkBoard>(chunks, geometry.slot_count);
    board->SetFailureListener(on_board_failure);
  }
  // Takes `made` as the arena's memory.
  void Adopt(SharedMemory made) {
    shm = std::move(made);
    base = static_cast<uint8_t*>(shm.data());
  }
};

// The arena a job needs, from what PrepareJob found and the job's settings.
class ArenaPlanner {
 public:
  ArenaPlanner(const PreparedJob& prepared, const JobSettings& settings, const Config& config,
               const RenderRange& range)
      : p_(prepared), settings_(settings), config_(config), range_(range) {}

  // What the pipeline keeps in flight (common/shm_protocol.h).
  ArenaDemand Demand() const;
  // How input frames lie in a slot: with color_conversion device the source's 4:2:0 planes as
  // they are; more than 8 bits reach the model as 16 (rgb48).
  FrameFormat InputFormat(ColorConversion conversion) const;
  // How output frames lie in a slot: yuv420p where the input is (color_conversion device), the
  // frames are whole and of even size, the source limited range and the encoder's pix_fmt
  // yuv420p: the worker converts back to YUV in float, the encoder takes the planes as they are
  // (worker/batch/frame_convert.h says why). Else the prepared job's rgb24 or rgb48.
  FrameFormat OutputFormat(FrameFormat in_format, int out_w, int out_h) const;
  // The job's color_conversion (color_choice.h) for workers on `worker_device` and output frames
  // of out_w x out_h; `*warning` as ChooseColorConversion leaves it.
  ColorConversion Conversion(const std::string& worker_device, int out_w, int out_h,
                             std::string* warning) const;
  // The arena's geometry for these output and input frames.
  Result<ArenaGeometry> For(int out_w, int out_h, FrameFormat in_format) const;
  // The arena this job will most likely need, guessed before any worker has probed the model:
  // the output at the card's scale (else the frame's own size), the input as the job's device
  // would take it (with `*conversion`, the colour conversion that input needs). Device "auto" is
  // guessed a GPU where the host has NVIDIA's driver (/dev/nvidiactl), else the CPU.
  std::optional<ArenaGeometry> Guess(ColorConversion* conversion) const;
  // Whether the workers page-lock an arena of `geometry` (page_lock_arena; with "auto", when the
  // frames this run renders pay for it: WorthPageLocking). Only CUDA workers act on it.
  bool PageLocks(const ArenaGeometry& geometry) const;
  // The log's line for the arena in place, and a warning when it holds fewer chunks than the
  // pipeline keeps in flight (large output frames fill the default arena with a few chunks).
  void LogReady(const JobArena& arena, int out_w, int out_h, const std::string& worker_device) const;

 private:
  const PreparedJob& p_;
  const JobSettings& settings_;
  const Config& config_;
  const RenderRange& range_;
};

}  // namespace framemill
