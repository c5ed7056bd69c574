#include <doctest/doctest.h>

#include <algorithm>

#include "supervisor/media/carried_metadata.h"

using namespace framemill;

namespace {

CarriedStream Stream(int index, const std::string& type, const std::string& codec,
                     const std::string& language = "", const std::string& title = "") {
  CarriedStream s;
  s.index = index;
  s.type = type;
  s.codec = codec;
  s.language = language;
  s.title = title;
  return s;
}

// A film rip: video (eng, default), two audio tracks, a forced subtitle, a font, cover art, a
// tmcd data stream, chapters and a title.
CarriedMetadata Source() {
  CarriedMetadata m;
  m.title = "A film";
  m.chapters = {{0.0, 1.0, "Opening"}, {1.0, 2.0, "Closing"}};
  m.streams.push_back(Stream(0, "video", "h264", "eng", "Picture"));
  m.streams[0].is_default = true;
  m.streams[0].timecode = "01:00:00:00";
  m.streams[0].bitstream_tags = {"BPS", "ENCODER"};
  m.streams.push_back(Stream(1, "audio", "aac", "eng", "English"));
  m.streams[1].is_default = true;
  m.streams.push_back(Stream(2, "audio", "aac", "fra", "Commentaire"));
  m.streams.push_back(Stream(3, "subtitle", "subrip", "ger", "Forced"));
  m.streams[3].forced = true;
  m.streams.push_back(Stream(4, "attachment", "ttf"));
  m.streams[4].filename = "font.ttf";
  m.streams[4].mimetype = "application/x-truetype-font";
  m.streams.push_back(Stream(5, "video", "mjpeg"));
  m.streams[5].attached_pic = true;
  m.streams.push_back(Stream(6, "data", ""));
  m.streams[6].timecode = "01:00:00:00";
  return m;
}

// The output a faithful Matroska mux gives: the planned streams in plan order.
CarriedMetadata FaithfulOutput(const CarriedMetadata& src, const CarriedPlan& plan) {
  CarriedMetadata out;
  out.title = src.title;
  out.chapters = src.chapters;
  CarriedStream video = plan.video;
  video.codec = "h264";
  out.streams.push_back(video);
  for (const CarriedEntry& e : plan.streams) {
    out.streams.push_back(e.source);
    if (!e.convert_to.empty())
      out.streams.back().codec = e.convert_to == "srt" ? "subrip" : e.convert_to;
  }
  return out;
}

bool Has(const std::vector<std::string>& args, const std::vector<std::string>& run) {
  return std::search(args.begin(), args.end(), run.begin(), run.end()) != args.end();
}

}  // namespace

TEST_CASE("carried metadata: a Matroska output plans every track, the font and the cover") {
  CarriedMetadata src = Source();
  CarriedPlan plan = PlanCarried(src, 0, ContainerFamily::kMatroska);
  REQUIRE(plan.streams.size() == 5);
  CHECK(plan.streams[3].source.type == "attachment");
  CHECK(plan.streams[4].mode == CarryMode::kCoverAsFile);  // attached last, after the maps
  CHECK(plan.left_out.empty());
  CHECK(plan.timecode == "01:00:00:00");
  plan.streams[4].cover_file = "/scratch/cover0.jpg";
  std::vector<std::string> a = CarriedArguments(plan);
  CHECK(Has(a, {"-map", "1:4"}));
  CHECK(Has(a, {"-attach", "/scratch/cover0.jpg"}));
  CHECK(Has(a, {"-map_chapters", "1"}));
  CHECK(Has(a, {"-map_metadata:s:0", "1:s:0", "-disposition:0", "default"}));
  CHECK(Has(a, {"-map_metadata:s:2", "1:s:2", "-disposition:2", "0"}));
  CHECK(Has(a, {"-disposition:3", "forced"}));
  CHECK(Has(a, {"-metadata:s:0", "BPS="}));  // the old bitstream's figures are not the new one's
  CHECK(Has(a, {"-metadata:s:5", "mimetype=image/jpeg"}));
  CHECK(CheckCarriedMetadata(src, plan, FaithfulOutput(src, plan)).ok());
}

TEST_CASE("carried metadata: each thing lost fails the check, naming it") {
  const CarriedMetadata src = Source();
  const CarriedPlan plan = PlanCarried(src, 0, ContainerFamily::kMatroska);
  auto fails = [&](CarriedMetadata out, const std::string& words) {
    Status s = CheckCarriedMetadata(src, plan, out);
    CHECK(s.code() == StatusCode::kVerifyFailed);
    CHECK_MESSAGE(s.message().find(words) != std::string::npos, s.message());
  };
  CarriedMetadata out = FaithfulOutput(src, plan);
  out.chapters.pop_back();
  fails(out, "1 chapters, the source has 2");
  out = FaithfulOutput(src, plan);
  out.chapters[1].start = 1.5;
  fails(out, "chapter 2 starts at 1.500 s");
  out = FaithfulOutput(src, plan);
  out.title.clear();
  fails(out, "the title is \"\"");
  out = FaithfulOutput(src, plan);
  out.streams[0].language.clear();
  fails(out, "the video stream has language \"\", the source \"eng\"");
  out = FaithfulOutput(src, plan);
  out.streams[2].title.clear();
  fails(out, "has title \"\", the source \"Commentaire\"");
  out = FaithfulOutput(src, plan);
  out.streams[3].is_default = true;
  fails(out, "has disposition default+forced, the source forced");
  out = FaithfulOutput(src, plan);
  out.streams.erase(out.streams.begin() + 4);  // the font
  fails(out, "the output has 5 streams, 6 were written");
  out = FaithfulOutput(src, plan);
  out.streams[5].attached_pic = false;
  fails(out, "no longer cover art");
  out = FaithfulOutput(src, plan);
  out.streams[0].timecode.clear();
  fails(out, "timecode");
}

TEST_CASE("carried metadata: MP4 holds what it can, and the rest is left out by name") {
  CarriedMetadata src = Source();
  CarriedPlan plan = PlanCarried(src, 0, ContainerFamily::kMp4);
  // The font cannot go into MP4; subrip is converted to mov_text; the cover goes in by copy.
  REQUIRE(plan.left_out.size() == 1);
  CHECK(plan.left_out[0].find("font.ttf") != std::string::npos);
  REQUIRE(plan.streams.size() == 4);
  CHECK(plan.streams[2].convert_to == "mov_text");
  CHECK(Has(CarriedArguments(plan), {"-c:3", "mov_text"}));
  CHECK(plan.streams[3].source.attached_pic);
  CHECK(plan.streams[3].mode == CarryMode::kCopy);
  CarriedMetadata out = FaithfulOutput(src, plan);
  // MP4 keeps no track titles and no forced flag, and adds a chapter track (a data stream).
  for (CarriedStream& s : out.streams) s.title.clear();
  out.streams.push_back(Stream(9, "data", "bin_data", "eng"));
  CHECK(CheckCarriedMetadata(src, plan, out).ok());
  out.streams[1].language = "";
  CHECK(CheckCarriedMetadata(src, plan, out).code() == StatusCode::kVerifyFailed);
  out = FaithfulOutput(src, plan);
  out.streams[3].codec = "subrip";  // not converted after all: MP4 would not have taken it
  CHECK(CheckCarriedMetadata(src, plan, out).code() == StatusCode::kVerifyFailed);
}

TEST_CASE("carried metadata: bitmap subtitles that a container cannot take are left out") {
  CarriedMetadata src;
  src.streams = {Stream(0, "video", "h264"), Stream(1, "subtitle", "hdmv_pgs_subtitle", "eng"),
                 Stream(2, "subtitle", "mov_text", "fra")};
  CarriedPlan mp4 = PlanCarried(src, 0, ContainerFamily::kMp4);
  REQUIRE(mp4.streams.size() == 1);
  CHECK(mp4.streams[0].source.codec == "mov_text");
  CHECK(mp4.streams[0].convert_to.empty());
  CHECK(mp4.left_out.size() == 1);
  // Matroska takes PGS as it is and mov_text as SubRip.
  CarriedPlan mkv = PlanCarried(src, 0, ContainerFamily::kMatroska);
  REQUIRE(mkv.streams.size() == 2);
  CHECK(mkv.streams[0].convert_to.empty());
  CHECK(mkv.streams[1].convert_to == "srt");
}

TEST_CASE("carried metadata: a second video stream that is not cover art is left out") {
  CarriedMetadata src;
  src.streams = {Stream(0, "video", "h264"), Stream(1, "video", "h264"), Stream(2, "audio", "aac")};
  CarriedPlan plan = PlanCarried(src, 0, ContainerFamily::kMatroska);
  REQUIRE(plan.streams.size() == 1);
  CHECK(plan.streams[0].source.type == "audio");
  REQUIRE(plan.left_out.size() == 1);
  CHECK(plan.left_out[0].find("further video stream") != std::string::npos);
}
