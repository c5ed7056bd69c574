// Face mode: the face table of the frames one run renders (supervisor/faces/job_faces.h), kept in
// the job's scratch directory as faces.json so that a resumed run pastes the very faces the
// first run would have. Found before any worker starts; the decode stage writes each chunk's
// warps into the arena beside its frames.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/faces/face_table.h"
#include "supervisor/job/prepared_job.h"

namespace framemill {

// The faces of frames [range.first_chunk's first frame, range.end_chunk's): the table the first
// run made when this run resumed `resumed` > 0 segments and that table covers these frames with
// the same margin, else found again (and written). `*figures` are this run's frames' own.
// `beat` is called as the face pass goes (the job shows life).
Result<FaceTable> FacesForRun(const Config& config, const JobSpec& job, const PreparedJob& prepared,
                              const RenderRange& range, int64_t resumed, const std::string& scratch,
                              const std::atomic<bool>& stop, const std::function<void()>& beat,
                              FaceFigures* figures);

}  // namespace framemill
