// Non-maximum suppression for face detections, MediaPipe's "weighted" kind: BlazeFace answers a
// face with several overlapping anchors, and instead of keeping only the best one, the boxes and
// keypoints of a cluster are averaged with the scores as weights (steadier from frame to frame
// than the single best box). Pure arithmetic; thread-safe.
#pragma once

#include <vector>

#include "common/face.h"

namespace framemill {

// Clusters `faces` greedily, best score first: a cluster is the best remaining face and every
// remaining face whose box overlaps it by at least `min_iou` (intersection over union). Each
// cluster becomes one face: box and keypoints are the score-weighted means of its members', the
// score is its best member's. Returned best score first; at most `max_faces` when max_faces > 0.
std::vector<Face> WeightedNms(std::vector<Face> faces, float min_iou, int max_faces);

}  // namespace framemill
