// depth's part of the output verification (output_muxer.cpp's Verify): the output's bit depth,
// chroma layout and alpha plane are those of the pixel format the job chose, its colour tags those of the job's
// colour path (supervisor/media/color_path.h), and an HDR source's mastering display and content light
// metadata are in it, equal to the source's.
//
// Tags and metadata are checked for libx264 and libx265 outputs, whose bitstream carries them
// (VUI, SEI) whatever the container. For libx264 the caller reads the HDR SEI with
// ReadBitstreamHdr (hdr_metadata.h): ffprobe 5.1 does not show them. Pure function.
#pragma once

#include <string>

#include "common/status.h"
#include "supervisor/media/color_path.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

struct DepthExpectation {
  std::string pix_fmt;  // the encoder's output format; "" = nothing to check
  std::string codec;    // the encoder
  ColorPath color;      // tags both ways
  HdrMetadata hdr;      // the source's
};

// kVerifyFailed naming the first difference.
Status CheckDepthAndColor(const DepthExpectation& want, const VideoStreamInfo& got);

}  // namespace framemill
