// The decode stage: one ffmpeg decoder reading the source from the first chunk this run renders
// into the arena's free slots, chunk by chunk (marking each decoded on the board), and in face
// mode each chunk's face warps beside its frames. A decoder that crashes is restarted where it
// stopped (Config::decoder_restarts); one that exits with an error is tried once more at that
// frame to tell bad input from a crash. Owns the decoder and its figures; meets the other stages
// only at the arena and its board. Runs on a thread of its own (Run).
//
// Test faults: job/supervisor_hooks.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/frame_format.h"
#include "common/status.h"
#include "supervisor/faces/face_table.h"
#include "supervisor/job/job_arena.h"
#include "supervisor/job/prepared_job.h"
#include "supervisor/media/ffmpeg_pipes.h"
#include "supervisor/workers/dispatcher.h"

namespace framemill {

struct DecodeSetup {
  const Config* config = nullptr;
  const PreparedJob* prepared = nullptr;
  std::string input;                // the job's input, for messages
  RenderRange range;                // chunks [first_chunk, end_chunk)
  FrameFormat in_format = FrameFormat::kRgb24;
  ColorConversion conversion = ColorConversion::kAccurate;
  std::string scratch;              // decoder.log goes here
  const FaceTable* faces = nullptr;  // face mode: this run's frames' faces
  int64_t restarts_used = 0;        // of Config::decoder_restarts, by an earlier stage of the run
};

// What the stage did, read once its thread has ended.
struct DecodeFigures {
  double decode_s = 0;       // reading frames, in the pipeline
  double decode_wait_s = 0;  // waiting for a free slot
  double decode_early_s = 0;  // reading frames before the pipeline began (an early decoder)
  int64_t restarts = 0;       // crashed decoders restarted (counting restarts_used)
  std::vector<std::string> faults;  // each crash survived, as reported
  // The decoder ended before the frames the packets promise (not by a crash): a damaged picture
  // inside the stream, or a file cut short. RunJob runs such a job once more, every picture
  // decoded first to learn which (job_runner.h).
  bool ended_short = false;
};

class DecodeStage {
 public:
  // `wake`: the dispatcher to wake for each decoded chunk, once there is one; `pipeline_start_us`
  // the moment the pipeline began (0 before): reading before it is the start's.
  DecodeStage(DecodeSetup setup, JobArena* arena, const std::atomic<Dispatcher*>* wake,
              const std::atomic<uint64_t>* pipeline_start_us);

  // Decodes every chunk of the range, then checks the decoder ends where the packets said. A
  // failure (or an exception) fails the board.
  void Run();
  const DecodeFigures& figures() const { return figures_; }

 private:
  void Loop();
  // The decoder's -vf: the geometry filters (deinterlace, turn upright), then the colour path's
  // conversion to the model's format.
  std::vector<std::string> Filters() const;
  Status Start(int64_t skip);
  Result<bool> ReadFrame(uint8_t* dst);
  Result<bool> DecodeChunk(int64_t c, std::vector<bool>* reserved);
  void WriteChunkFaces(int64_t first, int32_t frames, uint32_t slot);
  void Fail(const Status& s);
  // Time from `from` to now: the pipeline's share into `*pipeline`, the start's into `*early`.
  void Account(uint64_t from, double* pipeline, double* early) const;

  const DecodeSetup s_;
  const PreparedJob& p_;
  JobArena& arena_;
  const std::atomic<Dispatcher*>& wake_;
  const std::atomic<uint64_t>& pipeline_start_us_;
  std::unique_ptr<FrameReader> reader_;
  int64_t next_frame_ = 0;         // the frame the decoder delivers next
  int64_t error_retried_at_ = -1;  // where a decoder's error exit was retried
  DecodeFigures figures_;
};

}  // namespace framemill
