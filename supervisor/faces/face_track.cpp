#include "supervisor/faces/face_track.h"

#include <algorithm>
#include <tuple>

namespace framemill {
namespace {

// One track: its faces on consecutive frames from `first` (after filling, none missing).
struct Track {
  int64_t first = 0;
  std::vector<Face> faces;   // index: frame - first
  std::vector<bool> filled;  // same index
  int64_t last_seen() const { return first + static_cast<int64_t>(faces.size()) - 1; }
};

// The values of a face that smoothing and interpolation treat alike.
constexpr int kValues = 4 + 2 * kFaceKeypoints;

void ToValues(const Face& f, float* v) {
  v[0] = f.x, v[1] = f.y, v[2] = f.width, v[3] = f.height;
  for (int k = 0; k < kFaceKeypoints; ++k)
    v[4 + 2 * k] = f.keypoints[k].x, v[5 + 2 * k] = f.keypoints[k].y;
}

void FromValues(const float* v, Face* f) {
  f->x = v[0], f->y = v[1], f->width = v[2], f->height = v[3];
  for (int k = 0; k < kFaceKeypoints; ++k) f->keypoints[k] = {v[4 + 2 * k], v[5 + 2 * k]};
}

// `a` and `b` mixed: (1 - t) a + t b; the lower score.
Face Mix(const Face& a, const Face& b, float t) {
  float va[kValues], vb[kValues];
  ToValues(a, va);
  ToValues(b, vb);
  for (int i = 0; i < kValues; ++i) va[i] += t * (vb[i] - va[i]);
  Face out;
  FromValues(va, &out);
  out.score = std::min(a.score, b.score);
  return out;
}

// Appends `face` at `frame` to `track`, first filling the frames it missed.
void Extend(Track* track, int64_t frame, const Face& face) {
  const int64_t gap = frame - track->last_seen() - 1;
  const Face before = track->faces.back();
  for (int64_t g = 1; g <= gap; ++g) {
    track->faces.push_back(Mix(before, face, static_cast<float>(g) / (gap + 1)));
    track->filled.push_back(true);
  }
  track->faces.push_back(face);
  track->filled.push_back(false);
}

// The centred window mean of each value (see the header).
std::vector<Face> Smooth(const std::vector<Face>& faces, int radius) {
  const int n = static_cast<int>(faces.size());
  std::vector<std::array<float, kValues>> values(n);
  for (int i = 0; i < n; ++i) ToValues(faces[i], values[i].data());
  std::vector<Face> out(faces);
  for (int i = 0; i < n; ++i) {
    const int r = std::min({radius, i, n - 1 - i});
    float sum[kValues] = {};
    for (int j = i - r; j <= i + r; ++j) {
      for (int v = 0; v < kValues; ++v) sum[v] += values[j][v];
    }
    for (float& s : sum) s /= static_cast<float>(2 * r + 1);
    FromValues(sum, &out[i]);
  }
  return out;
}

}  // namespace

FaceTracks TrackFaces(const std::vector<std::vector<Face>>& detections,
                      const FaceTrackOptions& options) {
  std::vector<Track> tracks;
  for (size_t frame = 0; frame < detections.size(); ++frame) {
    const int64_t f = static_cast<int64_t>(frame);
    std::vector<const Face*> faces;
    for (const Face& d : detections[frame]) {
      if (d.width >= options.min_size) faces.push_back(&d);
    }
    // Candidate pairs: (overlap, track, face), best first; ties by track then face, so that the
    // result does not depend on the sort's stability.
    std::vector<std::tuple<float, size_t, size_t>> pairs;
    for (size_t t = 0; t < tracks.size(); ++t) {
      if (f - tracks[t].last_seen() > options.max_gap + 1) continue;
      for (size_t i = 0; i < faces.size(); ++i) {
        const float iou = BoxIou(tracks[t].faces.back(), *faces[i]);
        if (iou >= options.min_iou) pairs.emplace_back(iou, t, i);
      }
    }
    std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
      if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
      return std::tie(std::get<1>(a), std::get<2>(a)) < std::tie(std::get<1>(b), std::get<2>(b));
    });
    std::vector<bool> track_taken(tracks.size(), false), face_taken(faces.size(), false);
    for (const auto& [iou, t, i] : pairs) {
      if (track_taken[t] || face_taken[i]) continue;
      track_taken[t] = face_taken[i] = true;
      Extend(&tracks[t], f, *faces[i]);
    }
    for (size_t i = 0; i < faces.size(); ++i) {
      if (!face_taken[i]) tracks.push_back(Track{f, {*faces[i]}, {false}});
    }
  }

  FaceTracks out;
  out.frames.resize(detections.size());
  out.tracks = static_cast<int>(tracks.size());
  for (size_t t = 0; t < tracks.size(); ++t) {
    const std::vector<Face> smooth = Smooth(tracks[t].faces, options.smooth_radius);
    for (size_t i = 0; i < smooth.size(); ++i) {
      TrackedFace tf;
      tf.track = static_cast<uint32_t>(t);
      tf.face = smooth[i];
      tf.face.score = tracks[t].faces[i].score;
      tf.filled = tracks[t].filled[i];
      out.frames[tracks[t].first + i].push_back(tf);
    }
  }
  for (std::vector<TrackedFace>& frame : out.frames) {
    std::stable_sort(frame.begin(), frame.end(), [](const TrackedFace& a, const TrackedFace& b) {
      return a.face.width * a.face.height > b.face.width * b.face.height;
    });
    if (frame.size() > static_cast<size_t>(std::max(options.max_faces, 0))) {
      frame.resize(options.max_faces);
    }
  }
  return out;
}

}  // namespace framemill
