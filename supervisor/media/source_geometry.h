// The picture a source shows, as opposed to the one it stores: its display matrix (rotation by a
// multiple of 90 degrees, mirroring), its sample aspect ratio and its field order, read from
// ffprobe; and the decoder filters that hand the model upright, progressive frames.
//
// The decoder runs with `-autorotate 0` and these filters instead of ffmpeg's own rotation, so
// that deinterlacing comes first (fields are rows of the stored picture: after a transpose they
// would be columns) and the frame size the supervisor reads is computed here, from the same
// matrix, never assumed. Pure functions: thread-safe.
#pragma once

#include <atomic>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

// How the stored picture is turned to be displayed: first mirrored left-right when `hflip`, then
// rotated clockwise by `rotation` degrees (0, 90, 180 or 270). These two cover all eight
// right-angle orientations (a vertical flip is hflip + 180, a transpose hflip + 270).
struct DisplayTransform {
  int rotation = 0;
  bool hflip = false;
  bool operator==(const DisplayTransform& o) const {
    return rotation == o.rotation && hflip == o.hflip;
  }
};

// The transform of a display matrix as FFmpeg stores it (nine int32: a b u / c d v / x y w, the
// 2x2 part 16.16 fixed point, mapping a stored point (p, q) to (a p + c q, b p + d q) in
// y-down picture coordinates, as in the QuickTime 'tkhd' box). A matrix with a uniform scale is
// accepted. Errors: kInputInvalid for a rotation that is not a multiple of 90 degrees, a shear
// or a degenerate matrix.
Result<DisplayTransform> TransformFromMatrix(const std::array<int64_t, 9>& m);

// The same from ffprobe's text form ("\n00000000:     0   65536   0\n00000001: ..."): three rows,
// each an index and a colon before three integers. Errors: kInputInvalid when it does not parse.
Result<DisplayTransform> TransformFromDisplayMatrixText(const std::string& text);

// Fills the geometry fields of `v` (rotation, hflip, sample_aspect, field_order, display_width,
// display_height) from one stream object of `ffprobe -show_streams -of json`; width and height
// must be filled already. Errors: kInputInvalid for a display matrix framemill cannot honour.
Status ReadGeometry(const nlohmann::json& stream, VideoStreamInfo* v);

// Corrects v->field_order by the first frames' own flags (`ffprobe -show_entries
// frame=interlaced_frame,top_field_first` on up to 8 frames of the video stream): the stream-level
// field_order is a guess of the parser in some containers (MP4 says "tt" for every interlaced
// H.264 stream), while the frames' flags are what decoders and deinterlacers go by. Interlaced
// when either says so; the order of the first interlaced frame ("tt" or "bb"). Frames ffprobe
// cannot decode leave the stream's word. Errors: kIo when ffprobe cannot be started; kCancelled
// once `stop` (may be null) is set.
Status ReadFrameFieldOrder(const std::string& ffprobe, const SourceFile& source, VideoStreamInfo* v,
                           const std::atomic<bool>* stop = nullptr);

// true for "tt", "bb", "tb", "bt" (ffprobe's interlaced field orders).
bool IsInterlaced(const std::string& field_order);
// For an interlaced order: whether the top field comes first. FFmpeg's own command line (5.1)
// writes "tb" for a top-field-first stream and "bt" for a bottom-field-first one, so the first
// letter is what counts here.
bool TopFieldFirst(const std::string& field_order);

// The filters that turn stored frames into displayed ones (empty for none): transpose, hflip,
// vflip, each a single pass.
std::vector<std::string> OrientationFilters(const DisplayTransform& t);

// The deinterlacing filter for `mode` and a source with `field_order` ("" for none). Each keeps
// the frame rate (one frame per frame: bwdif and yadif send_frame, w3fdif and estdif frame;
// kerndeint always does): the plan counts the source's frames. kAuto is bwdif on frames flagged
// interlaced, only for a source whose field_order is interlaced; a named filter works on every
// frame (sources flagged wrongly are why one names a filter).
std::string DeinterlaceFilter(Deinterlace mode, const std::string& field_order);

// The decoder's filters for `v`: deinterlacing, then orientation. The frames that come out are
// v.display_width x v.display_height. Errors: kInvalidJob for `deinterlace: off` on an interlaced
// source that must be turned by 90 or 270 degrees (its fields would become columns).
Result<std::vector<std::string>> GeometryFilters(const VideoStreamInfo& v, Deinterlace mode);

// Whether the frames the model gets are still interlaced (the output then keeps the order).
bool KeepsFields(const VideoStreamInfo& v, Deinterlace mode);

// The sample aspect ratio of the upright frames: the stored one, inverted by a quarter turn.
Rational UprightSampleAspect(const VideoStreamInfo& v);

// The sample aspect ratio that shows `out_w` x `out_h` frames made from upright `in_w` x `in_h`
// frames of aspect `sar` at the same display aspect ratio: `sar` itself when the model scales
// both axes alike, else corrected by the ratio of the two scales. Reduced; {1, 1} for bad input.
Rational OutputSampleAspect(const Rational& sar, int in_w, int in_h, int out_w, int out_h);

// The display aspect ratio of `w` x `h` pixels of aspect `sar`, as a number.
double DisplayAspect(int w, int h, const Rational& sar);

}  // namespace framemill
