#include "corpus.h"

#include <stdexcept>

namespace framemill::test {
namespace {

const std::string kFf = "ffmpeg -nostdin -hide_banner -v error -y ";
// 12 frames at 25 fps of a moving, detailed test picture; a tone as long.
std::string Picture(const std::string& size = "160x120") {
  return "-f lavfi -i testsrc2=s=" + size + ":r=25:d=0.48 ";
}
std::string Tone(int hz) { return "-f lavfi -i sine=f=" + std::to_string(hz) + ":d=0.48 "; }

// Chapters and a title as an ffmetadata file; two subtitle cues; a stand-in font (only its bytes
// travel, nothing renders it).
const std::string kChapters =
    "printf ';FFMETADATA1\\ntitle=Corpus-title\\n[CHAPTER]\\nTIMEBASE=1/1000\\nSTART=0\\n"
    "END=240\\ntitle=Opening\\n[CHAPTER]\\nTIMEBASE=1/1000\\nSTART=240\\nEND=480\\n"
    "title=Closing\\n' > chapters.txt";
const std::string kSubtitles =
    "printf '1\\n00:00:00,000 --> 00:00:00,240\\nhello\\n\\n2\\n00:00:00,240 --> "
    "00:00:00,480\\nworld\\n' > cues.srt";
const std::string kFont = "printf 'framemill test font bytes' > font.ttf";
const std::string kCover = kFf + "-f lavfi -i color=red:s=64x64 -frames:v 1 cover.jpg";
// Languages, titles and dispositions on every stream: two audio tracks, two subtitle tracks
// (one forced), the video's own language and title.
const std::string kTrackTags =
    "-metadata:s:v:0 language=eng -metadata:s:v:0 title=Picture "
    "-metadata:s:a:0 language=eng -metadata:s:a:0 title=English "
    "-metadata:s:a:1 language=fra -metadata:s:a:1 title=Commentaire "
    "-metadata:s:s:0 language=eng -metadata:s:s:1 language=ger -metadata:s:s:1 title=Forced "
    "-disposition:v:0 default -disposition:a:0 default -disposition:a:1 0 "
    "-disposition:s:0 0 -disposition:s:1 forced ";
const std::string kTracksInputs = Picture() + Tone(440) + Tone(660) +
                                  "-i cues.srt -i cues.srt -i chapters.txt -map 0:v -map 1:a "
                                  "-map 2:a -map 3:s -map 4:s -map_metadata 5 -map_chapters 5 ";

std::vector<CorpusEntry> MakeCorpus() {
  std::vector<CorpusEntry> c;
  c.push_back({"h264_aac_mp4",
               "the common case: H.264 and AAC in MP4",
               "src.mp4",
               "out.mp4",
               {kFf + Picture() + Tone(440) + "-c:v libx264 -c:a aac src.mp4"}});
  c.push_back({"mkv_chapters_tracks",
               "a film rip: chapters, title, two audio and two subtitle tracks with languages, "
               "titles and default/forced flags, a font attachment",
               "src.mkv",
               "out.mkv",
               {kChapters, kSubtitles, kFont,
                kFf + kTracksInputs + "-c:v libx264 -c:a aac -c:s srt " + kTrackTags +
                    "-attach font.ttf -metadata:s:t:0 mimetype=application/x-truetype-font "
                    "-metadata:s:t:0 filename=font.ttf src.mkv"}});
  c.push_back(
      {"mp4_chapters_tracks",
       "an MP4 with chapters, a title, two audio languages and mov_text subtitles",
       "src.mp4",
       "out.mp4",
       {kChapters, kSubtitles,
        kFf + kTracksInputs + "-c:v libx264 -c:a aac -c:s mov_text " + kTrackTags + "src.mp4"}});
  c.push_back({"srt_into_mp4",
               "a Matroska film rip with SubRip subtitles asked for as MP4 (converted to "
               "mov_text)",
               "src.mkv",
               "out.mp4",
               {kChapters, kSubtitles,
                kFf + kTracksInputs + "-c:v libx264 -c:a aac -c:s srt " + kTrackTags + "src.mkv"}});
  c.push_back(
      {"mov_text_into_mkv",
       "an MP4 with mov_text subtitles asked for as Matroska (converted to SubRip)",
       "src.mp4",
       "out.mkv",
       {kChapters, kSubtitles,
        kFf + kTracksInputs + "-c:v libx264 -c:a aac -c:s mov_text " + kTrackTags + "src.mp4"}});
  c.push_back({"timecode_mov",
               "camera footage with a start timecode (a tmcd track)",
               "src.mov",
               "out.mov",
               {kFf + Picture() + "-c:v libx264 -timecode 01:02:03:04 src.mov"}});
  c.push_back({"cover_art_mp4",
               "a music video with cover art",
               "src.mp4",
               "out.mp4",
               {kCover, kFf + Picture() +
                            "-i cover.jpg -map 0:v -map 1:v -c:v:0 libx264 -c:v:1 "
                            "copy -disposition:v:1 attached_pic src.mp4"}});
  c.push_back({"cover_art_mkv",
               "a Matroska file with cover art as an attachment (mkvmerge)",
               "src.mkv",
               "out.mkv",
               {kCover, kFf + Picture() + "-c:v libx264 plain.mkv",
                "mkvmerge -q -o src.mkv --attachment-mime-type image/jpeg --attachment-name "
                "cover.jpg --attach-file cover.jpg plain.mkv"}});
  c.push_back({"two_video_streams",
               "two video streams (the first is processed, the second is left out)",
               "src.mkv",
               "out.mkv",
               {kFf + Picture() + "-f lavfi -i smptebars=s=160x120:r=25:d=0.48 " + Tone(440) +
                "-map 0:v -map 1:v -map 2:a -c:v libx264 -c:a aac src.mkv"}});
  c.push_back({"variable_frame_rate",
               "a screen or phone recording at a variable frame rate",
               "src.mkv",
               "out.mkv",
               {kFf + Picture() +
                "-vf 'setpts=if(lt(N\\,6)\\,N/25\\,0.24+(N-6)/10)/TB' -fps_mode vfr "
                "-c:v libx264 src.mkv"}});
  c.push_back({"open_gop",
               "an open-GOP H.264 stream (broadcast encoders)",
               "src.mp4",
               "out.mp4",
               {kFf + "-f lavfi -i testsrc2=s=160x120:r=25:d=0.96 -c:v libx264 -x264-params "
                      "open-gop=1:keyint=8:min-keyint=8:scenecut=0:bframes=3 src.mp4"}});
  c.push_back({"mpeg2_ts_offset",
               "a broadcast capture: MPEG-2 video and MP2 audio in MPEG-TS starting at 10 s",
               "src.ts",
               "out.mkv",
               {kFf + Picture() + Tone(440) +
                "-c:v mpeg2video -q:v 2 -c:a mp2 -output_ts_offset 10 src.ts"}});
  c.push_back({"vp9_webm",
               "VP9 and Opus in WebM",
               "src.webm",
               "out.mkv",
               {kFf + Picture() + Tone(440) +
                "-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -c:a libopus src.webm"}});
  // Debian 12's ffmpeg encodes AV1 with libaom-av1, libsvtav1 and librav1e and decodes it with
  // libdav1d (and libaom); libaom at its fastest setting is quick enough for 12 small frames.
  c.push_back({"av1_webm",
               "AV1 and Opus in WebM",
               "src.webm",
               "out.mkv",
               {kFf + Picture() + Tone(440) +
                "-c:v libaom-av1 -cpu-used 8 -row-mt 1 -c:a libopus src.webm"}});

  // geometry rows
  for (int degrees : {90, 180, 270}) {
    c.push_back({"rotation_" + std::to_string(degrees),
                 "a phone clip shot upright: stored landscape, a display matrix rotates it",
                 "src.mp4",
                 "out.mp4",
                 {kFf + Picture() + "-c:v libx264 plain.mp4",
                  kFf + "-i plain.mp4 -c copy -metadata:s:v:0 rotate=" + std::to_string(degrees) +
                      " src.mp4"},
                 kLumaFloorDb,
                 kChromaFloorDb,
                 Pending::kNone});
  }
  c.push_back({"anamorphic_pal",
               "a PAL DVD picture shown 16:9: SAR 64:45",
               "src.mp4",
               "out.mp4",
               {kFf + Picture("176x144") + "-vf setsar=64/45 -c:v libx264 src.mp4"},
               kLumaFloorDb,
               kChromaFloorDb,
               Pending::kNone});
  c.push_back({"anamorphic_ntsc",
               "an NTSC DVD picture shown 4:3: SAR 8:9",
               "src.mkv",
               "out.mkv",
               {kFf + Picture("176x120") + "-vf setsar=8/9 -c:v libx264 src.mkv"},
               kLumaFloorDb,
               kChromaFloorDb,
               Pending::kNone});
  c.push_back({"odd_size",
               "an odd-sized screen recording (161x121, VP9)",
               "src.webm",
               "out.mkv",
               {kFf + Picture() +
                "-vf scale=161:121 -c:v libvpx-vp9 -deadline realtime "
                "-cpu-used 8 src.webm"},
               // Through the default libx264: 4:4:4, since H.264 can neither code nor crop half
               // a chroma sample (config/README.md); compared with the 4:2:0 source.
               37.0,
               30.0,
               Pending::kNone,
               "{}",
               "yuv444p"});
  for (const char* order : {"tff", "bff"}) {
    const bool top = std::string(order) == "tff";
    c.push_back(
        {std::string("interlaced_") + order,
         std::string("a DVD or camcorder capture, interlaced ") +
             (top ? "top field first" : "bottom field first") + " (MPEG-2)",
         "src.mkv",
         "out.mkv",
         // Fields 1/50 s apart (woven from 50 fps), so that moving edges comb.
         {kFf + "-f lavfi -i testsrc2=s=160x120:r=50:d=0.48 -vf tinterlace=mode=" +
          (top ? "interleave_top" : "interleave_bottom") +
          " -c:v mpeg2video -q:v 2 -flags +ilme+ildct -top " + (top ? "1" : "0") + " src.mkv"},
         // Deinterlaced (deinterlace auto): the output has no combing, the source has, so the
         // picture differs from the source by design where things move.
         28.0,
         26.0,
         Pending::kNone});
  }

  // depth rows
  c.push_back({"ten_bit_420",
               "10-bit 4:2:0 H.264",
               "src.mkv",
               "out.mkv",
               {kFf + Picture() + "-c:v libx264 -pix_fmt yuv420p10le src.mkv"},
               kLumaFloorDb,
               kChromaFloorDb,
               Pending::kNone});
  c.push_back({"ten_bit_422",
               "10-bit 4:2:2 H.264 (camera intermediate)",
               "src.mkv",
               "out.mkv",
               {kFf + Picture() + "-c:v libx264 -pix_fmt yuv422p10le src.mkv"},
               kLumaFloorDb,
               kChromaFloorDb,
               Pending::kNone});
  c.push_back(
      {"twelve_bit",
       "12-bit 4:2:0 HEVC",
       "src.mkv",
       "out.mkv",
       {kFf + Picture() + "-c:v libx265 -pix_fmt yuv420p12le -x265-params log-level=error src.mkv"},
       kLumaFloorDb,
       kChromaFloorDb,
       Pending::kNone,
       R"({"encoder": {"codec": "libx265", "crf": 18, "preset": "medium", "pix_fmt": "auto"}})"});
  c.push_back({"yuv444",
               "8-bit 4:4:4 H.264 (screen capture)",
               "src.mkv",
               "out.mkv",
               {kFf + Picture() + "-c:v libx264 -pix_fmt yuv444p src.mkv"},
               kLumaFloorDb,
               kChromaFloorDb,
               Pending::kNone});
  c.push_back({"full_range",
               "full-range (yuvj420p) H.264, as phones and webcams write",
               "src.mp4",
               "out.mp4",
               {kFf + Picture() + "-c:v libx264 -pix_fmt yuvj420p src.mp4"},
               kLumaFloorDb,
               kChromaFloorDb,
               Pending::kNone});
  c.push_back({"hdr10",
               "HDR10: PQ, BT.2020, mastering display and content light level",
               "src.mkv",
               "out.mkv",
               {kFf + Picture() +
                "-c:v libx265 -pix_fmt yuv420p10le -color_primaries bt2020 -color_trc smpte2084 "
                "-colorspace bt2020nc -x265-params 'log-level=error:hdr10=1:master-display="
                "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):"
                "max-cll=1000,400' src.mkv"},
               // libx265 output: ffprobe 5.1 reads HDR side data back from HEVC, not from H.264
               // (the job's own verification reads x264's SEI with trace_headers).
               38.0,
               33.0,
               Pending::kNone,
               R"({"encoder": {"codec": "libx265", "crf": 18, "preset": "medium", "pix_fmt": "auto"}})"});
  c.push_back({"hlg",
               "HLG (ARIB STD-B67), BT.2020, 10-bit HEVC",
               "src.mkv",
               "out.mkv",
               {kFf + Picture() +
                "-c:v libx265 -pix_fmt yuv420p10le -color_primaries bt2020 -color_trc "
                "arib-std-b67 -colorspace bt2020nc -x265-params log-level=error src.mkv"},
               39.0,
               34.0,
               Pending::kNone});
  c.push_back({"prores_mov",
               "ProRes 422 HQ in MOV (10-bit 4:2:2, an editing intermediate)",
               "src.mov",
               "out.mov",
               {kFf + Picture() + "-c:v prores_ks -profile:v 3 -pix_fmt yuv422p10le src.mov"},
               kLumaFloorDb,
               kChromaFloorDb,
               Pending::kNone});
  return c;
}

}  // namespace

const char* Name(Pending pending) {
  switch (pending) {
    case Pending::kNone:
      return "none";
    case Pending::kGeometry:
      return "geometry";
    case Pending::kDepth:
      return "depth";
  }
  return "?";
}

const std::vector<CorpusEntry>& Corpus() {
  static const std::vector<CorpusEntry> corpus = MakeCorpus();
  return corpus;
}

const CorpusEntry& CorpusEntryNamed(const std::string& name) {
  for (const CorpusEntry& e : Corpus()) {
    if (e.name == name) return e;
  }
  throw std::out_of_range("no corpus entry named " + name);
}

}  // namespace framemill::test
