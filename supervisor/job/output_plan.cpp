#include "supervisor/job/output_plan.h"

#include "common/log.h"
#include "supervisor/media/source_geometry.h"

namespace framemill {

Result<OutputSize> OutputSizeFor(const VideoStreamInfo& v, JobMode mode, const ProbeShape& probe_in,
                                 uint32_t probe_w, uint32_t probe_h) {
  if (mode == JobMode::kFaces) {
    if (probe_w != probe_h || probe_w == 0 || probe_w % probe_in.width != 0) {
      return Status(StatusCode::kModelInvalid,
                    "face model maps a " + std::to_string(probe_in.width) + "x" +
                        std::to_string(probe_in.height) + " face to " + std::to_string(probe_w) +
                        "x" + std::to_string(probe_h) +
                        "; face mode needs the same square or a whole multiple of it");
    }
    return OutputSize{v.display_width, v.display_height};
  }
  const uint64_t ow = static_cast<uint64_t>(v.display_width) * probe_w;
  const uint64_t oh = static_cast<uint64_t>(v.display_height) * probe_h;
  if (probe_w == 0 || probe_h == 0 || ow % probe_in.width != 0 || oh % probe_in.height != 0) {
    return Status(StatusCode::kModelInvalid,
                  "model output size " + std::to_string(probe_w) + "x" + std::to_string(probe_h) +
                      " for a " + std::to_string(probe_in.width) + "x" +
                      std::to_string(probe_in.height) + " input is not a whole scale of " +
                      std::to_string(v.display_width) + "x" + std::to_string(v.display_height));
  }
  return OutputSize{static_cast<int>(ow / probe_in.width), static_cast<int>(oh / probe_in.height)};
}

Status PlanOutputGeometry(const VideoStreamInfo& v, Deinterlace deinterlace,
                          const std::vector<std::string>& filters, OutputSize size,
                          EncoderSettings* encoder, OutputGeometry* geometry,
                          std::vector<std::string>* warnings) {
  geometry->display_width = size.width;
  geometry->display_height = size.height;
  geometry->sample_aspect = OutputSampleAspect(UprightSampleAspect(v), v.display_width,
                                               v.display_height, size.width, size.height);
  geometry->field_order = !KeepsFields(v, deinterlace)    ? "progressive"
                          : TopFieldFirst(v.field_order) ? "tt"
                                                         : "bb";
  std::string chain;
  for (const std::string& f : filters) chain += (chain.empty() ? "" : ",") + f;
  std::string warning;
  // pix_fmt "auto" is already the source's depth and chroma layout (PrepareJob).
  Result<std::string> pix_fmt =
      PixelFormatForSize(encoder->codec, encoder->pix_fmt, size.width, size.height, &warning);
  if (!pix_fmt.ok()) return pix_fmt.status();
  if (!warning.empty()) {
    spdlog::warn("{}", warning);
    warnings->push_back(warning);
  }
  encoder->pix_fmt = *pix_fmt;
  spdlog::info(
      "geometry: stored {}x{}, shown {}x{} (turned {} degrees{}), sample aspect {}, field order "
      "{}; decoder filters: {}; output {}x{}, sample aspect {}, {}",
      v.width, v.height, v.display_width, v.display_height, v.rotation, v.hflip ? ", mirrored" : "",
      v.sample_aspect.ToString(), v.field_order.empty() ? "unknown" : v.field_order,
      chain.empty() ? "none" : chain, size.width, size.height, geometry->sample_aspect.ToString(),
      geometry->field_order);
  return Status::Ok();
}

}  // namespace framemill
