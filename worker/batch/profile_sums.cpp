#include "worker/batch/profile_sums.h"

#include <cstdio>

namespace framemill {

void StageSums::Add(const StageSums& o) {
  upload += o.upload;
  to_model += o.to_model;
  model += o.model;
  from_model += o.from_model;
  download += o.download;
  host_copy += o.host_copy;
  span += o.span;
  wall += o.wall;
  between += o.between;
  fed_period += o.fed_period;
  fed_frames += o.fed_frames;
  frames += o.frames;
  chunks += o.chunks;
}

std::string StageSums::PerFrame() const {
  if (frames <= 0) return "no frames";
  const double f = static_cast<double>(frames);
  char line[384];
  std::snprintf(line, sizeof line,
                "upload %.3f, to_model %.3f, model %.3f, from_model %.3f, download %.3f, "
                "host_copy %.3f; chunk span %.3f, chunk wall %.3f, between chunks %.3f; fed %.3f "
                "(%lld frames)",
                upload / f, to_model / f, model / f, from_model / f, download / f, host_copy / f,
                span / f, wall / f, between / f,
                fed_frames > 0 ? fed_period / static_cast<double>(fed_frames) : 0.0,
                static_cast<long long>(fed_frames));
  return line;
}

void ProfileSums::AddChunk(StageSums chunk) {
  chunk.chunks = 1;
  if (first_.chunks == 0) {
    first_ = chunk;
  } else {
    later_.Add(chunk);
  }
}

std::string ProfileSums::Line() const {
  if (first_.chunks == 0) return "";
  char head[160];
  std::snprintf(head, sizeof head,
                "profile: first chunk: %lld frames, wall %.3f ms, per frame ms: ",
                static_cast<long long>(first_.frames), first_.wall);
  std::string line = head + first_.PerFrame() + "; later chunks: ";
  if (later_.chunks == 0) return line + "none";
  std::snprintf(head, sizeof head,
                "%lld chunks, %lld frames, per frame ms: ", static_cast<long long>(later_.chunks),
                static_cast<long long>(later_.frames));
  return line + head + later_.PerFrame();
}

}  // namespace framemill
