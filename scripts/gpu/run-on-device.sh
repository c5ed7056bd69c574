#!/usr/bin/env bash
# Builds framemill on a GPU machine against the CUDA LibTorch of its Python torch, and runs the
# steps named on the command line (default: build tests throughput):
#
#   build       cmake + build in build-gpu (LibTorch from `python3 -c 'import torch; ...'`);
#               $BUILD_TARGETS builds only those targets
#   tests       unit tests; the integration tests that need no shared clips, on CUDA
#   throughput  framemill-bench, 1080p, `heavy` fp16, accurate and fast colour conversion
#   sharpen     framemill-bench, 1080p, `sharpen` fp16, fast colour, 1 and 2 encoders
#   gpus        framemill-bench, 1080p, `heavy` fp16: one GPU against every GPU ($COLOR colour
#               conversion, default device; $ENCODERS encoders, default 4; $WORKERS workers per
#               GPU, default "1 2")
#   servicegpus the service's queue over every GPU of the machine (bench/service-gpus.sh):
#               $SVC_JOBS jobs (default 8) of $SVC_SECONDS s (default 120) of 1080p through
#               `restore` fp16, with the service owning GPU 0, then all GPUs; $RUNS as there
#               (8 x 120 s is about 480 s on one H200: run "one" and "all" in two calls)
#   decode      the decoding ceiling: ffmpeg decoding the 1080p input into a pipe, alone
#   recycle     bench/recycle-cost.sh on the GPU
#   soak        framemill-soak on CUDA: an hour of video, recycling by GPU reserved memory
#   privateroot a short CUDA job (sharpen, 640x360) with worker_sandbox required and the rules
#               listed: the summary (it must say mntns), the private root's mounts, and the
#               error if any; on an error, again with all of /proc and /dev bound
#               (FRAMEMILL_SANDBOX_EXTRA_READ) and again without the private root, to tell them apart
#   restore     the realistic example model (`restore`, fp16, 1080p): the model alone in PyTorch
#               (scripts/gpu/model-reference.py: TorchScript, eager, torch.compile), then
#               framemill-bench (device colour, 2 encoders, 1 worker), then one `framemill run`
#               with FRAMEMILL_WORKER_PROFILE=1: where the worker's time goes per frame
#   profile     one `framemill run` (fp16, device colour, 2 encoders, 1 worker) through $PROF_MODEL
#               (an example model or a model file with its card; default restore) with
#               FRAMEMILL_WORKER_PROFILE=1 and $PROF_JOB's job keys (e.g. '"batch": 4'): the
#               summary and the worker's profile, its first chunk apart from the later ones
#               ($PROF_ENCODERS encoders, default 2; x264 $PROF_PRESET, default veryfast;
#               $PROF_CONFIG: config keys, e.g. '"arena_mb": 8192')
#   shapecheck  $SHAPE_PKG (a .pt2 made for one shape) without its card: the job must fail with
#               the worker's reason (the package's metadata), not run the package at 64x64
#   sandbox     the same CUDA job (heavy fp16, 1080p) with worker_sandbox off and required: the
#               sandbox each worker got, the rules (FRAMEMILL_SANDBOX_DEBUG), fps, and whether
#               both outputs are the same frames
#   pt2         the same network as TorchScript and as a .pt2 package: `restore` exported to
#               TorchScript, packaged by scripts/export-pt2.py (fp16, CUDA, batch 1-16, 32-2048
#               pixels a side), the worker's .pt2 unit tests on CUDA, framemill-bench on each
#               (device colour, 2 encoders, 1 worker), and one `framemill run` of the package
#               with worker_sandbox required (the package unpacks into the private root's /tmp)
#   pt2fixed    $PT2_MODEL (an example model, default restore) packaged for one shape
#               (export-pt2.py --shape 1920x1080 --batch B for each B of $PT2_BATCHES, default
#               "4 8"; into $OUT); for restore then scripts/gpu/pt2-reference.py: frozen
#               TorchScript, torch.compile and the packages side by side; the worker's .pt2
#               unit tests on CUDA; and the pixels: `framemill run` of 300 frames through
#               the TorchScript model and the first package, PSNR of one output against the other
#   pt2bench    framemill-bench (fp16, device colour, 2 encoders, 1 worker) on each package of
#               $PT2_DIR (default $OUT) named $PT2_MODEL-1080p-b*.pt2, the job's batch the
#               package's; with $PT2_BASE=B first $PT2_MODEL.pt (TorchScript) at batch B, the same way
#   overlap     chunks back to back (worker/batch_runner.h), off and on in one call: for each
#               case of $OV_CASES (';' between cases, each "MODEL WxH FRAMES JOB_KEYS"; default:
#               realesr-animevideov3-x4 at 720p in 16-frame chunks, realesr-animevideov3-x2 and
#               restore at 1080p), $OV_ROUNDS rounds (default 2) of one `framemill run` with
#               FRAMEMILL_WORKER_OVERLAP_CHUNKS=0 and one without, each with
#               FRAMEMILL_WORKER_PROFILE=1 (fp16, device colour, 4 x264 `ultrafast` encoders,
#               1 worker, page-locked arena): fps, the worker's later chunks ("fed": what it
#               sustains when never waiting for work), and whether the two outputs hold the same
#               frames (framemd5). MODEL: an example model, or an imported one (carry the waifu2x
#               package for realesr-animevideov3-*)
#   startcost   bench/start-cost.sh on the GPU (issue 17, item 2): a 1080p job of $SC_SECONDS s
#               (default 60) through $SC_MODEL (an example model or a model file with its card,
#               default restore) in the service, with cold and with warm workers, against the
#               steady state of a job $SC_LONG (default 5) times as long; fp16, device colour,
#               2 encoders ($SC_JOB adds job keys, e.g. '"batch": 4' for a package made for
#               batch 4); $SC_ROUNDS rounds
#               (default 2; $SC_VARIANTS: job keys that differ, ';' between variants, each
#               run cold and warm in every round; $SC_CONFIG: service config keys, e.g.
#               '"log_level": "debug"'); work in build-gpu/startcost, the service's log
#               and the workers' start lines in $OUT (named with $SC_TAG, to keep two runs')
#   models      the imported trained models on the GPU (carry .deps/model-packages/esrgan-*, or
#               a trimmed copy named by $PACKAGES,
#               and waifu2x-*): each imported here (LibTorch 2.11), then framemill-bench fp16,
#               device colour, 2 encoders, 1 worker on $MODEL_FRAMES frames (default 300): the
#               x2 models at 1080p, the x4 models at 720p; then `framemill run` of a 1080p clip
#               through realesr-animevideov3-x4 (7680x4320 out) and of a 4K clip through
#               esrgan-slim-x2, each with tile auto and chunk_frames 4: fps, model_fallbacks
#               ($MODELS names the models to run instead; MODEL_TILES=0 leaves out the tile runs)
#   longinput   the long run's input, once, kept in build-gpu/long (it outlives a call while the
#               machine stays warm): generated 1080p footage (testsrc2, a 440 Hz tone) of 185 frames
#               without B-frames (so that the loop stays constant-rate), looped by stream
#               copy to $LONG_FRAMES frames (default 30,000, rounded up to whole loops of 185); then framemill-bench on its first 1,500 frames (the
#               per-frame loop's rate beside framemill's on the same content)
#   long        one `framemill run` over the long input: `restore` fp16, device colour,
#               2 encoders, 1 worker (or one on each GPU of $LONG_GPUS, say "0,1", with
#               $LONG_ENCODERS encoders), recycled every $LONG_RECYCLE chunks (default 150) with warm
#               standby, audio kept; then per worker generation the host RSS and GPU memory at
#               its first and last chunk (scripts/gpu/timeline-summary.py)
#   faces       face mode's throughput (BENCHMARKS.md): for K = $FACES_K (default "1 2 4") faces
#               a frame, the 1080p clip of bench/face-input.sh ($FACE_FRAMES frames, default 600,
#               made here in build-gpu/faces), then framemill-bench with its face table
#               (FRAMEMILL_BENCH_FACE_TABLE, fp16, device colour, 2 encoders, 1 worker) through
#               `restore` and `identity` at face_size 512: the per-frame face loop beside
#               `framemill run` in face mode; logs $OUT/faces-kK-MODEL.log, then one table.
#               All within $FACES_BUDGET s (default 420); what does not fit is skipped, saying
#               so (run again with FACES_K naming the rest).
#               The tables come from a machine with OpenCV (this one has none): before the call,
#               there, `for k in 1 2 4; do bench/face-input.sh .device/faces 1920x1080 $k 600
#               --table 512 .deps/face-detector/face_detection_back_256x256_barracuda.onnx
#               build/framemill; done` (about 100 KB a table), and carry .device/faces
#
# Expects the static ffmpeg from scripts/build-static-ffmpeg.sh in .deps/ffmpeg-static, and the
# CLI11 headers in .deps/include/CLI (the GPU image has no libcli11-dev): before the call, here,
# `mkdir -p .deps/include && cp -r /usr/include/CLI .deps/include/`, and carry both
# .deps/ffmpeg-static and .deps/include (CMakeLists.txt finds CLI11 there). Writes
# logs to $OUT (default ./gpu-out). $FRAMES sets the benchmark input's length (default 1500).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
FRAMES=${FRAMES:-1500}
mkdir -p "$OUT"
export PATH=$PWD/.deps/ffmpeg-static:$PATH
log() { echo "== $*"; }
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build tests throughput)

log "machine"
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count(), "GPUs")'
ffmpeg -version | head -1
nproc
gpu_count=$(nvidia-smi -L | wc -l)

bench_input() {  # makes $OUT/in1080.mp4 once
  [ -f "$OUT/in1080.mp4" ] && return
  ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v "$FRAMES" \
    -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p "$OUT/in1080.mp4"
}

# profile_run NAME MODEL_FILE [JOB_KEYS]: one `framemill run` of $OUT/in1080.mp4 through the model
# with FRAMEMILL_WORKER_PROFILE=1 (fp16, device colour, 2 encoders, 1 worker, x264 veryfast; more
# job keys as JSON members); prints its summary and each worker's profile line (the first chunk
# apart from the later ones).
profile_run() {
  printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", "workers": 1,
    "precision": "fp16", "color_conversion": "device", "encoders": %s, "overwrite": true,
    "encoder": {"preset": "%s"}%s}\n' "$OUT/in1080.mp4" "$OUT/$1-profile.mkv" "$2" \
    "${PROF_ENCODERS:-2}" "${PROF_PRESET:-veryfast}" "${3:+, $3}" >"$OUT/$1-profile.job.json"
  printf '{%s}\n' "${PROF_CONFIG:-}" >"$OUT/$1-profile.config.json"
  mkdir -p "$OUT/$1-worker"
  (while sleep 0.2; do cp "$OUT"/.framemill-work.*/worker-*.log "$OUT/$1-worker/" 2>/dev/null; done) &
  local copier=$!
  FRAMEMILL_WORKER_PROFILE=1 ./build-gpu/framemill run --config "$OUT/$1-profile.config.json" \
    "$OUT/$1-profile.job.json" >"$OUT/$1-profile.log" 2>&1
  echo "exit $?"
  kill "$copier"
  grep "wrote\|stages:\|workers \|failed\|error" "$OUT/$1-profile.log" | cut -c1-400 | tail -5
  grep -h "profile:" "$OUT/$1-worker"/*.log | tail -4
}

for step in "${steps[@]}"; do
  case $step in
    build)
      log "build"
      prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
      t0=$(date +%s)
      # Fuzzing runs on the Debian CI (clang + libFuzzer), not here: the image may have no clang.
      # The GPU image lacks OpenCV and mkvmerge, both configure errors in tests/CMakeLists.txt:
      # the real-footage tests are turned off, and mkvmerge's find_program cache is pre-set to
      # /bin/true so that configure passes (the tests that need mkvmerge are not run here), and so is
      # promtool's (the metrics tests are not run here), and node's (the TF.js reference test is
      # not run here).
      cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
        -DFRAMEMILL_FUZZ=OFF -DFRAMEMILL_REAL_FOOTAGE_TESTS=OFF -DFRAMEMILL_TEST_MKVMERGE=/bin/true \
        -DFRAMEMILL_TEST_PROMTOOL=/bin/true -DFRAMEMILL_TEST_NODE=/bin/true \
        > "$OUT/cmake.log" 2>&1 || { tail -40 "$OUT/cmake.log"; exit 1; }
      grep -E "framemill:|CUDA" "$OUT/cmake.log" | head
      # $BUILD_TARGETS: only these (e.g. "framemill framemill-worker" for the benchmarks).
      # shellcheck disable=SC2086
      cmake --build build-gpu -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} -- -k 0 \
        > "$OUT/build.log" 2>&1 ||
        { grep -E ": error|Error [0-9]" -A2 "$OUT/build.log" | head -80; exit 1; }
      echo "build took $(( $(date +%s) - t0 )) s"
      ;;
    tests)
      log "unit tests"
      ./build-gpu/tests/framemill_unit_tests 2>&1 | tail -3
      log "integration tests on cuda (those that need no OpenCV)"
      # Through ctest, one process a test: a test that cannot run on a GPU ends as skipped (exit
      # 77) without ending the others. FRAMEMILL_GPU_TESTS is a ctest regex.
      gpus=$(seq -s, 0 $((gpu_count - 1)))
      FRAMEMILL_TEST_DEVICE=cuda FRAMEMILL_TEST_GPUS=$gpus ctest --test-dir build-gpu -R \
        "${FRAMEMILL_GPU_TESTS:-integration:(frame-exact|recovery|precision|gpus|encoders|fast colour|device colour|sandbox|shm security)}" \
        2>&1 | grep -E "tests passed|\(Failed|\(Skipped|Timeout" | cut -c1-160
      ;;
    throughput)
      bench_input
      for color in accurate fast; do
        log "throughput: heavy fp16, $color colour conversion"
        (cd build-gpu && ./framemill model export heavy "$OUT/heavy.pt" >/dev/null &&
          FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=$color \
            ./framemill-bench "$OUT/in1080.mp4" "$OUT/heavy.pt" cuda 1 2 4)
      done
      ;;
    sharpen)
      bench_input
      for enc in 1 2; do
        log "throughput: sharpen fp16, fast colour conversion, $enc encoder(s)"
        (cd build-gpu && ./framemill model export sharpen "$OUT/sharpen.pt" >/dev/null &&
          FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=fast FRAMEMILL_BENCH_ENCODERS=$enc \
            ./framemill-bench "$OUT/in1080.mp4" "$OUT/sharpen.pt" cuda 2)
      done
      ;;
    gpus)
      bench_input
      log "throughput: heavy fp16, ${COLOR:-device} colour, one GPU against $gpu_count"
      (cd build-gpu && ./framemill model export heavy "$OUT/heavy.pt" >/dev/null &&
        FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=${COLOR:-device} \
          FRAMEMILL_BENCH_ENCODERS=${ENCODERS:-4} FRAMEMILL_BENCH_GPUS=$(seq -s, 0 $((gpu_count - 1))) \
          ./framemill-bench "$OUT/in1080.mp4" "$OUT/heavy.pt" cuda ${WORKERS:-1 2})
      ;;
    decode)
      bench_input
      for fmt in "rgb24 -sws_flags bicubic+accurate_rnd+full_chroma_int" \
        "rgb24 -sws_flags bicubic+full_chroma_int" "yuv420p"; do
        log "decoding alone into a pipe: -pix_fmt $fmt"
        TIMEFORMAT="$FRAMES frames: %R s wall, %U s user, %S s system"
        # shellcheck disable=SC2086  # $fmt holds several arguments
        time (ffmpeg -nostdin -v error -i "$OUT/in1080.mp4" -f rawvideo -pix_fmt $fmt - | cat >/dev/null)
      done
      ;;
    restore)
      bench_input
      ./build-gpu/framemill model export restore "$OUT/restore.pt" >/dev/null
      log "restore: the model alone in PyTorch"
      python3 scripts/gpu/model-reference.py "$OUT/restore.pt" 2>&1 | grep -v Warning
      log "restore: framemill-bench fp16, device colour, 2 encoders, 1 worker"
      (cd build-gpu && FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=device \
        FRAMEMILL_BENCH_ENCODERS=2 ./framemill-bench "$OUT/in1080.mp4" "$OUT/restore.pt" cuda 1)
      log "restore: the worker's own profile (FRAMEMILL_WORKER_PROFILE=1)"
      profile_run restore "$OUT/restore.pt"
      ;;
    profile)
      bench_input
      pm=${PROF_MODEL:-restore}
      if [ ! -f "$pm" ]; then
        ./build-gpu/framemill model export "$pm" "$OUT/$pm.pt" >/dev/null
        pm=$OUT/$pm.pt
      fi
      log "profile: $(basename "$pm")${PROF_JOB:+ ($PROF_JOB)}, FRAMEMILL_WORKER_PROFILE=1"
      profile_run "$(basename "$pm")" "$pm" "${PROF_JOB:-}"
      ;;
    shapecheck)
      # A package made for one shape, without its card: the supervisor then probes it at 64x64,
      # batch 1, and the worker must refuse that from the package's own metadata, with a reason,
      # instead of running it (a package reads its input as traced: "an illegal memory access").
      pkg=${SHAPE_PKG:-}
      if [ ! -f "$pkg" ]; then
        log "shapecheck: skipped: \$SHAPE_PKG must name a package made for one shape"
        continue
      fi
      mkdir -p "$OUT/shapecheck"
      cp "$pkg" "$OUT/shapecheck/bare.pt2"
      ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v 16 \
        -c:v libx264 -preset veryfast -pix_fmt yuv420p "$OUT/shapecheck/in.mp4"
      printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", "workers": 1,
        "precision": "fp16", "overwrite": true}\n' "$OUT/shapecheck/in.mp4" \
        "$OUT/shapecheck/out.mkv" "$OUT/shapecheck/bare.pt2" >"$OUT/shapecheck/job.json"
      log "shapecheck: $(basename "$pkg") without its card (probed at 64x64, batch 1)"
      ./build-gpu/framemill run "$OUT/shapecheck/job.json" >"$OUT/shapecheck/run.log" 2>&1
      echo "exit $? (expected: not 0, the shape refused)"
      grep -i "error\|failed\|shape\|illegal" "$OUT/shapecheck/run.log" | cut -c1-300 | tail -6
      ;;
    pt2)
      bench_input
      ./build-gpu/framemill model export restore "$OUT/restore.pt" >/dev/null
      log "pt2: what Inductor passes to a compiler named g++ when it links a package"
      mkdir -p "$OUT/gxx" && printf '#!/bin/sh\necho "$@" >>%s/gxx/args.log\nexec /usr/bin/g++ "$@"\n' \
        "$OUT" >"$OUT/gxx/g++" && chmod +x "$OUT/gxx/g++"
      python3 - "$OUT/gxx" <<'PY' 2>&1 | grep -v Warn | tail -3
import os, sys
os.environ["PATH"] = sys.argv[1] + ":" + os.environ["PATH"]
import torch
class N(torch.nn.Module):
    def forward(self, x):
        return x * 2
ep = torch.export.export(N().cuda(), (torch.rand(1, 3, 8, 8, device="cuda"),))
torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1] + "/n.pt2")
print("packaged")
PY
      grep -- "-shared" "$OUT/gxx/args.log" | tail -1 | tr ' ' '\n' | grep -v '^-[ID]' | grep -v '\.cpp$\|\.o$' | tr '\n' ' '; echo
      log "pt2: package restore (fp16, cuda) from its TorchScript"
      t0=$(date +%s)
      python3 scripts/export-pt2.py --torchscript "$OUT/restore.pt" "$OUT/restore.pt2" \
        --max-size 2048 --max-batch 16 --name restore 2>&1 | grep -v Warning | tail -4
      echo "packaging took $(( $(date +%s) - t0 )) s"
      if [ ! -f "$OUT/restore.pt2" ]; then
        log "pt2: package restore (fp16, cuda) from its torch.nn.Module"
        t0=$(date +%s)
        RESTORE_PT="$OUT/restore.pt" PYTHONPATH=scripts/gpu python3 scripts/export-pt2.py \
          --module restore_module:model "$OUT/restore.pt2" --max-size 2048 --max-batch 16 \
          --name restore 2>&1 | grep -v Warning | tail -4
        echo "packaging took $(( $(date +%s) - t0 )) s"
      fi
      ls -la "$OUT/restore.pt2"
      log "pt2: the worker's .pt2 tests on CUDA"
      FRAMEMILL_TEST_DEVICE=cuda ./build-gpu/tests/framemill_worker_unit_tests 2>&1 | tail -3
      for m in restore.pt restore.pt2; do
        log "pt2: framemill-bench $m fp16, device colour, 2 encoders, 1 worker"
        (cd build-gpu && FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=device \
          FRAMEMILL_BENCH_ENCODERS=2 ./framemill-bench "$OUT/in1080.mp4" "$OUT/$m" cuda 1)
      done
      log "pt2: framemill run of the package, worker_sandbox required"
      printf '{"worker_sandbox": "required"}\n' >"$OUT/pt2.config.json"
      printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", "workers": 1,
        "precision": "fp16", "color_conversion": "device", "encoders": 2, "overwrite": true}\n' \
        "$OUT/in1080.mp4" "$OUT/restore-pt2.mkv" "$OUT/restore.pt2" >"$OUT/pt2.job.json"
      ./build-gpu/framemill run --config "$OUT/pt2.config.json" "$OUT/pt2.job.json" \
        >"$OUT/pt2-run.log" 2>&1
      echo "exit $?"
      grep -i "sandbox\|error\|fps\|frames" "$OUT/pt2-run.log" | tail -6
      ;;
    pt2fixed)
      bench_input
      pm=${PT2_MODEL:-restore}
      ./build-gpu/framemill model export "$pm" "$OUT/$pm.pt" >/dev/null
      for b in ${PT2_BATCHES:-4 8}; do
        if [ -n "${PT2_DIR:-}" ] && [ -f "$PT2_DIR/$pm-1080p-b$b.pt2" ]; then
          cp "$PT2_DIR/$pm-1080p-b$b.pt2" "$PT2_DIR/$pm-1080p-b$b.pt2.json" "$OUT/"
          continue  # packaged by an earlier call
        fi
        log "pt2fixed: package $pm for 1920x1080, batch $b"
        t0=$(date +%s)
        python3 scripts/export-pt2.py --torchscript "$OUT/$pm.pt" "$OUT/$pm-1080p-b$b.pt2" \
          --shape 1920x1080 --batch "$b" --name "$pm-1080p-b$b" 2>&1 | grep -v Warning | tail -3
        if [ ! -f "$OUT/$pm-1080p-b$b.pt2" ] && [ "$pm" = restore ]; then
          log "pt2fixed: from its torch.nn.Module instead"
          RESTORE_PT="$OUT/$pm.pt" PYTHONPATH=scripts/gpu python3 scripts/export-pt2.py \
            --module restore_module:model "$OUT/$pm-1080p-b$b.pt2" --shape 1920x1080 \
            --batch "$b" --name "$pm-1080p-b$b" 2>&1 | grep -v Warning | tail -3
        fi
        echo "packaging took $(( $(date +%s) - t0 )) s"
      done
      if [ "$pm" = restore ]; then  # the reference has restore's eager network for torch.compile
        log "pt2fixed: the forms side by side (scripts/gpu/pt2-reference.py)"
        python3 scripts/gpu/pt2-reference.py "$OUT/$pm.pt" "$OUT"/$pm-1080p-b*.pt2 2>&1 |
          grep -v Warning | tail -20
      fi
      log "pt2fixed: the worker's .pt2 tests on CUDA"
      FRAMEMILL_TEST_DEVICE=cuda ./build-gpu/tests/framemill_worker_unit_tests -tc='*.pt2*' 2>&1 |
        tail -4
      first=$(ls "$OUT"/$pm-1080p-b*.pt2 | head -1)
      fb=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fixed_batch"])' "$first.json")
      ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v 300 \
        -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p "$OUT/in300.mp4"
      for m in "$pm.pt" "$(basename "$first")"; do
        log "pt2fixed: framemill run, 300 frames through $m (batch $fb)"
        printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", "workers": 1,
          "precision": "fp16", "color_conversion": "device", "encoders": 2, "overwrite": true,
          "batch": %s, "encoder": {"crf": 0, "preset": "ultrafast"}}\n' "$OUT/in300.mp4" \
          "$OUT/out-$m.mkv" "$OUT/$m" "$fb" >"$OUT/run-$m.json"
        ./build-gpu/framemill run "$OUT/run-$m.json" >"$OUT/run-$m.log" 2>&1
        echo "exit $?"; grep "wrote\|stages:\|model maps\|failed" "$OUT/run-$m.log" | cut -c1-220 | tail -4
      done
      log "pt2fixed: PSNR of the package's frames against TorchScript's"
      ffmpeg -nostdin -v info -i "$OUT/out-$pm.pt.mkv" -i "$OUT/out-$(basename "$first").mkv" \
        -lavfi psnr -f null - 2>&1 | grep -i "psnr" | tail -1
      ;;
    pt2bench)
      bench_input
      pm=${PT2_MODEL:-restore}
      if [ -n "${PT2_BASE:-}" ]; then
        log "pt2bench: framemill-bench $pm.pt at batch $PT2_BASE, the same settings"
        ./build-gpu/framemill model export "$pm" "$OUT/$pm.pt" >/dev/null
        (cd build-gpu && FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=device \
          FRAMEMILL_BENCH_ENCODERS=2 FRAMEMILL_BENCH_BATCH=$PT2_BASE ./framemill-bench \
          "$OUT/in1080.mp4" "$OUT/$pm.pt" cuda 1)
      fi
      for pkg in "${PT2_DIR:-$OUT}"/$pm-1080p-b*.pt2; do
        log "pt2bench: framemill-bench $(basename "$pkg") fp16, device colour, 2 encoders, 1 worker"
        (cd build-gpu && FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=device \
          FRAMEMILL_BENCH_ENCODERS=2 ./framemill-bench "$OUT/in1080.mp4" "$pkg" cuda 1)
      done
      ;;
    overlap)
      mkdir -p "$OUT/overlap"
      cases=${OV_CASES:-'realesr-animevideov3-x4 1280x720 480 "chunk_frames": 16, "batch": 8;realesr-animevideov3-x2 1920x1080 480 "batch": 8;restore 1920x1080 480 "batch": 4'}
      IFS=';' read -ra ov_cases <<<"$cases"
      printf '{"arena_mb": 16384}\n' >"$OUT/overlap/config.json"
      for case in "${ov_cases[@]}"; do
        read -r name size frames keys <<<"$case"
        in="$OUT/overlap/in-$size-$frames.mp4"
        [ -f "$in" ] || ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=$size:rate=30" \
          -frames:v "$frames" -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p "$in"
        m="$OUT/overlap/$name.pt"
        [ -f "$m" ] || ./build-gpu/framemill model export "$name" "$m" >/dev/null 2>&1 ||
          ./build-gpu/framemill model import "$name" "$m" --packages "${PACKAGES:-.deps/model-packages}" ||
          { log "overlap: $name: neither an example model nor importable"; continue; }
        for round in $(seq "${OV_ROUNDS:-2}"); do
          for mode in off on; do
            tag="$name-$mode-$round"
            log "overlap: $name at $size, $frames frames ($keys): chunks back to back $mode, round $round"
            printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", "workers": 1,
              "precision": "fp16", "color_conversion": "device", "encoders": 4, "overwrite": true,
              "page_lock_arena": "on", "encoder": {"preset": "ultrafast"}, %s}\n' "$in" \
              "$OUT/overlap/$tag.mkv" "$m" "$keys" >"$OUT/overlap/$tag.job.json"
            mkdir -p "$OUT/overlap/$tag-worker"
            (while sleep 0.2; do cp "$OUT"/overlap/.framemill-work.*/worker-*.log "$OUT/overlap/$tag-worker/" 2>/dev/null; done) &
            copier=$!
            if [ $mode = off ]; then export FRAMEMILL_WORKER_OVERLAP_CHUNKS=0; else unset FRAMEMILL_WORKER_OVERLAP_CHUNKS; fi
            FRAMEMILL_WORKER_PROFILE=1 ./build-gpu/framemill run --config "$OUT/overlap/config.json" \
              "$OUT/overlap/$tag.job.json" >"$OUT/overlap/$tag.log" 2>&1
            echo "exit $?"
            unset FRAMEMILL_WORKER_OVERLAP_CHUNKS
            kill "$copier"
            grep "framemill: wrote\|framemill: stages:" "$OUT/overlap/$tag.log" | cut -c1-300
            echo "workers that died: $(grep -c "died:" "$OUT/overlap/$tag.log")"
            grep -h "profile:" "$OUT/overlap/$tag-worker"/*.log | tail -1 | sed 's/.*later chunks/later chunks/'
            ffmpeg -nostdin -v error -i "$OUT/overlap/$tag.mkv" -map 0:v -f framemd5 - 2>/dev/null |
              grep -v "^#" | md5sum | cut -c1-16 >"$OUT/overlap/$name-$mode-$round.frames"
            echo "frames $(cat "$OUT/overlap/$name-$mode-$round.frames")"
            rm -rf "$OUT/overlap/$tag".mkv* "$OUT/overlap/$tag".job.json "$OUT/overlap/$tag-worker"
          done
        done
        if [ "$(cat "$OUT"/overlap/"$name"-*.frames | sort -u | wc -l)" = 1 ]; then
          echo "overlap: $name: every run's output holds the same frames"
        else
          echo "overlap: $name: OUTPUTS DIFFER"
        fi
      done
      rm -f "$OUT"/overlap/*.pt "$OUT"/overlap/in-*.mp4
      ;;
    startcost)
      rm -rf build-gpu/startcost
      FRAMEMILL_BUILD_DIR=build-gpu FRAMEMILL_BENCH_DIR="$PWD/build-gpu/startcost" \
        FRAMEMILL_START_COST_JOB="\"precision\": \"fp16\", \"color_conversion\": \"device\", \"encoders\": 2${SC_JOB:+, $SC_JOB}" \
        FRAMEMILL_START_COST_VARIANTS="${SC_VARIANTS:-}" \
        FRAMEMILL_START_COST_CONFIG="${SC_CONFIG:-}" FRAMEMILL_START_COST_LONG="${SC_LONG:-5}" \
        bench/start-cost.sh cuda 1920x1080 "${SC_SECONDS:-60}" "${SC_MODEL:-restore}" 1 \
        "${SC_ROUNDS:-2}"
      cp build-gpu/startcost/serve.log "$OUT/startcost${SC_TAG:-}-serve.log" 2>/dev/null
      # Each worker's start, split (main(), sandbox, device, load, probe), and its arena; each
      # spare's device readiness and how long it waited.
      cat build-gpu/startcost/spool/workers/*.log 2>/dev/null |
        grep -E "ready on|arena of|spare" > "$OUT/startcost${SC_TAG:-}-workers.log" || true
      ;;
    models)
      mf=${MODEL_FRAMES:-300}
      mkdir -p "$OUT/models"
      for size in 1920x1080 1280x720 3840x2160; do
        [ -f "$OUT/models/in$size.mp4" ] || ffmpeg -nostdin -v error -y -f lavfi \
          -i "testsrc2=size=$size:rate=30" -frames:v "$mf" -c:v libx264 -preset veryfast -crf 20 \
          -pix_fmt yuv420p "$OUT/models/in$size.mp4"
      done
      for name in ${MODELS:-esrgan-slim-x2 esrgan-medium-x2 realesr-animevideov3-x2 esrgan-slim-x4 \
          realesr-animevideov3-x4}; do
        m="$OUT/models/$name.pt"
        ./build-gpu/framemill model import "$name" "$m" --packages "${PACKAGES:-.deps/model-packages}" || continue
        case $name in *x4) in="$OUT/models/in1280x720.mp4" ;; *) in="$OUT/models/in1920x1080.mp4" ;; esac
        log "models: $name fp16 on $(basename "$in"), device colour, 2 encoders, 1 worker"
        (cd build-gpu && FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=device \
          FRAMEMILL_BENCH_ENCODERS=2 ./framemill-bench "$in" "$m" cuda 1 2>&1 | grep -v "^  model (batch")
      done
      [ "${MODEL_TILES:-1}" = 1 ] || continue
      for pair in "realesr-animevideov3-x4 1920x1080" "esrgan-slim-x2 3840x2160"; do
        set -- $pair
        log "models: $1 on $2 in tiles (tile auto, chunk_frames 4, fp16)"
        printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", "workers": 1,
          "precision": "fp16", "color_conversion": "device", "encoders": 2, "overwrite": true,
          "chunk_frames": 4, "tile": "auto", "encoder": {"preset": "ultrafast"}}\n' \
          "$OUT/models/in$2.mp4" "$OUT/models/$1-$2.mkv" "$OUT/models/$1.pt" >"$OUT/models/job.json"
        printf '{"arena_mb": 16384}\n' >"$OUT/models/config.json"
        /usr/bin/time -f "%e s wall" ./build-gpu/framemill run --config "$OUT/models/config.json" \
          "$OUT/models/job.json" >"$OUT/models/$1-$2.log" 2>&1
        echo "exit $?"; grep -i "fps\|out of memory\|error\|s wall" "$OUT/models/$1-$2.log" | tail -5
      done
      ;;
    servicegpus)
      all=$(python3 -c 'import torch; print(",".join(map(str, range(torch.cuda.device_count()))))')
      log "service over GPUs [$all]: ${SVC_JOBS:-8} jobs of ${SVC_SECONDS:-120} s"
      FRAMEMILL_BUILD_DIR=build-gpu FRAMEMILL_BENCH_DIR=build-gpu/service-gpus \
        bench/service-gpus.sh "$all" "${SVC_JOBS:-8}" "${SVC_SECONDS:-120}"
      for d in one all; do cp "build-gpu/service-gpus/$d/serve.log" "$OUT/serve-$d.log" 2>/dev/null; done
      ;;
    soak)
      log "soak on cuda"
      (cd build-gpu && ./framemill-soak --device cuda --gpu-limit-mb 600 --dir "$OUT/soak")
      ;;
    recycle)
      log "recycle cost on the GPU"
      FRAMEMILL_BUILD_DIR=build-gpu bench/recycle-cost.sh cuda 1280x720 3000 heavy 2 8
      ;;
    privateroot)
      ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=640x360:rate=30 -frames:v 60 \
        -c:v libx264 -pix_fmt yuv420p "$OUT/root.mp4"
      ./build-gpu/framemill model export sharpen "$OUT/root-sharpen.pt" >/dev/null
      printf '{"worker_sandbox": "required"}\n' >"$OUT/root-required.config.json"
      printf '{"worker_sandbox": "auto"}\n' >"$OUT/root-auto.config.json"
      root_job() {  # NAME MODE [ENV...]: runs the short job, prints its exit, summary and error
        local name=$1 mode=$2
        shift 2
        printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", "workers": 1,
          "overwrite": true}\n' "$OUT/root.mp4" "$OUT/root-$name.mp4" "$OUT/root-sharpen.pt" \
          >"$OUT/root-$name.job.json"
        # The worker's own log (its rules) lives in the job's scratch directory while it runs.
        mkdir -p "$OUT/root-$name-worker"
        (while sleep 0.2; do cp "$OUT"/.framemill-work.*/worker-*.log "$OUT/root-$name-worker/" 2>/dev/null; done) &
        local copier=$!
        env FRAMEMILL_SANDBOX_DEBUG=1 "$@" ./build-gpu/framemill run "$OUT/root-$name.job.json" \
          --config "$OUT/root-$mode.config.json" >"$OUT/root-$name.log" 2>&1
        local rc=$?
        kill "$copier"
        echo "== privateroot $name ($mode${*:+, $*}): exit $rc"
        grep -E "worker sandbox:|job failed|CUDA|error" "$OUT/root-$name.log" | grep -v ' rule ' | head -4
      }
      root_job required required
      grep -hE "sandbox: (mntns|no mount)" "$OUT"/root-required-worker/*.log | sed 's/.*sandbox: //' |
        sort -u | head -70
      if ! grep -q "worker sandbox: .*mntns" "$OUT/root-required.log" ||
        grep -q "job failed" "$OUT/root-required.log"; then
        # Every failing file call, ioctl and mmap of the worker (scripts/gpu/trace-files.c).
        cc -shared -fPIC -O1 -o build-gpu/libtrace-files.so scripts/gpu/trace-files.c -ldl
        trace=LD_PRELOAD=$PWD/build-gpu/libtrace-files.so
        root_job traced auto "$trace"
        root_job traced-no-mntns auto "$trace" FRAMEMILL_SANDBOX_LAYERS=netns,rlimits,landlock,seccomp
        root_job no-pivot auto FRAMEMILL_SANDBOX_MNTNS_NO_PIVOT=1
        root_job proc-rw auto FRAMEMILL_SANDBOX_EXTRA_WRITE=/proc
        root_job dev-rw auto FRAMEMILL_SANDBOX_EXTRA_WRITE=/dev
        root_job sys-rw auto FRAMEMILL_SANDBOX_EXTRA_WRITE=/sys
        root_job etc-usr-opt auto FRAMEMILL_SANDBOX_EXTRA_READ=/etc:/usr:/opt:/var:/run:/root
        everything=$(find / -mindepth 1 -maxdepth 1 -type d ! -name proc ! -name sys ! -name dev | paste -sd:)
        root_job everything-bound auto "FRAMEMILL_SANDBOX_EXTRA_WRITE=$everything:/proc:/sys:/dev"
        for name in traced traced-no-mntns; do
          echo "== failing calls, $name (first of each path)"
          grep -h "trace-files:" "$OUT"/root-$name-worker/*.log | sort | uniq -c | sort -k2 | head -70
        done
      fi
      ;;
    sandbox)
      bench_input
      (cd build-gpu && ./framemill model export heavy "$OUT/heavy.pt" >/dev/null)
      for mode in off required; do
        log "sandbox: heavy fp16 on cuda, worker_sandbox $mode"
        printf '{"worker_sandbox": "%s"}\n' "$mode" >"$OUT/sandbox-$mode.config.json"
        printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda",
          "precision": "fp16", "workers": 1, "encoders": 2, "overwrite": true}\n' \
          "$OUT/in1080.mp4" "$OUT/sandbox-$mode.mp4" "$OUT/heavy.pt" >"$OUT/sandbox-$mode.job.json"
        FRAMEMILL_SANDBOX_DEBUG=1 ./build-gpu/framemill run "$OUT/sandbox-$mode.job.json" \
          --config "$OUT/sandbox-$mode.config.json" >"$OUT/sandbox-$mode.log" 2>&1
        echo "exit $?"
        grep -iE "sandbox|NOT SANDBOXED|fps|stages|error|failed" "$OUT/sandbox-$mode.log" | grep -v " rule " | head -12
        ffmpeg -nostdin -v error -i "$OUT/sandbox-$mode.mp4" -map 0:v -f framemd5 - 2>/dev/null |
          grep -v '^#' | awk '{print $NF}' | md5sum | cut -d' ' -f1 >"$OUT/sandbox-$mode.frames"
      done
      log "sandbox: worker logs of the required run (rules, denials)"
      grep -hiE "landlock|seccomp|denied|EACCES|EPERM|not permitted" "$OUT"/sandbox-required.log | head -40
      if cmp -s "$OUT/sandbox-off.frames" "$OUT/sandbox-required.frames"; then
        echo "sandbox: same frames with and without the sandbox"
      else
        echo "sandbox: the frames differ with and without the sandbox (fp16 with cuDNN autotuning need not be bit-exact from run to run; the sandbox integration test compares sharpen frame by frame)"
      fi
      ;;
    longinput)
      mkdir -p build-gpu/long
      if [ ! -f build-gpu/long/long-cfr.mp4 ]; then
        loops=$(( (${LONG_FRAMES:-30000} + 184) / 185 ))
        ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=1920x1080:rate=30 \
          -f lavfi -i sine=frequency=440:sample_rate=44100 -frames:v 185 -shortest -c:v libx264 \
          -bf 0 -preset veryfast -crf 20 -pix_fmt yuv420p -c:a aac build-gpu/long/base.mp4 &&
          ffmpeg -nostdin -v error -y -stream_loop $((loops - 1)) -i build-gpu/long/base.mp4 \
            -map 0 -c copy build-gpu/long/long-cfr.mp4 &&
          ffmpeg -nostdin -v error -y -i build-gpu/long/long-cfr.mp4 -map 0 -c copy -frames:v 1500 \
            build-gpu/long/short-cfr.mp4 || { echo "long input: ffmpeg failed"; exit 1; }
      fi
      ffprobe -v error -count_packets -show_entries stream=codec_type,nb_read_packets,duration \
        -of compact build-gpu/long/long-cfr.mp4
      ./build-gpu/framemill model export restore build-gpu/long/restore.pt >/dev/null
      log "long: framemill-bench on the long input's first 1500 frames (restore fp16, device colour, 2 encoders)"
      (cd build-gpu && FRAMEMILL_BENCH_PRECISION=fp16 FRAMEMILL_BENCH_COLOR=device \
        FRAMEMILL_BENCH_ENCODERS=2 ./framemill-bench long/short-cfr.mp4 long/restore.pt cuda 1)
      ;;
    long)
      [ -f build-gpu/long/long-cfr.mp4 ] || { echo "long: run the longinput step first"; exit 1; }
      # $LONG_GPUS (say "0,1"): one worker on each of those GPUs and $LONG_ENCODERS encoders
      # (default 2); unset: 1 worker on the first GPU.
      spread='"workers": 1'
      [ -n "${LONG_GPUS:-}" ] && spread="\"gpus\": [$LONG_GPUS], \"workers_per_gpu\": 1"
      log "long: framemill run, restore fp16, $spread, recycled every ${LONG_RECYCLE:-150} chunks"
      printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", %s,
        "precision": "fp16", "color_conversion": "device", "encoders": %d, "overwrite": true,
        "encoder": {"preset": "veryfast"}, "recycle": {"max_chunks": %d, "warm_standby": true}}\n' \
        "$PWD/build-gpu/long/long-cfr.mp4" "$PWD/build-gpu/long/long-out.mkv" \
        "$PWD/build-gpu/long/restore.pt" "$spread" "${LONG_ENCODERS:-2}" "${LONG_RECYCLE:-150}" \
        >"$OUT/long.job.json"
      /usr/bin/time -v ./build-gpu/framemill run "$OUT/long.job.json" >"$OUT/long.log" 2>"$OUT/long.time"
      echo "exit $?"
      grep -E "Maximum resident|Elapsed" "$OUT/long.time"
      grep -vE "^\s*$" "$OUT/long.log" | tail -12
      cp build-gpu/long/long-out.mkv.timeline.jsonl "$OUT/long.timeline.jsonl" 2>/dev/null
      python3 scripts/gpu/timeline-summary.py "$OUT/long.timeline.jsonl"
      ffprobe -v error -count_packets -show_entries stream=codec_type,nb_read_packets,duration \
        -of compact build-gpu/long/long-out.mkv
      ;;
    faces)
      ff=${FACE_FRAMES:-600}
      # One deadline for the whole step ($FACES_BUDGET s, default 420: with `build` first, the
      # call stays under the device tool's 600 s), each command's timeout what is left of it.
      faces_end=$(( $(date +%s) + ${FACES_BUDGET:-420} ))
      left() { echo $(( faces_end - $(date +%s) )); }
      mkdir -p build-gpu/faces
      for m in restore identity; do
        ./build-gpu/framemill model export $m "$OUT/face-$m.pt" >/dev/null
      done
      for k in ${FACES_K:-1 2 4}; do
        table=$PWD/.device/faces/faces-1920x1080-k$k-f$ff-s512.table.json
        [ -f "$table" ] || { echo "faces: no $table (carry .device/faces: see this step's comment)"; continue; }
        [ "$(left)" -gt 30 ] || { echo "faces: out of time (FACES_BUDGET) before K=$k"; break; }
        clip=$(timeout "$(left)" bench/face-input.sh build-gpu/faces 1920x1080 "$k" "$ff") ||
          { echo "faces: bench/face-input.sh failed for K=$k"; continue; }
        for m in restore identity; do
          [ "$(left)" -gt 30 ] || { echo "faces: out of time (FACES_BUDGET) before K=$k $m"; break 2; }
          log "faces: K=$k, $m fp16 at face_size 512, device colour, 2 encoders, 1 worker"
          (cd build-gpu && FRAMEMILL_BENCH_FACE_TABLE=$table FRAMEMILL_BENCH_PRECISION=fp16 \
            FRAMEMILL_BENCH_COLOR=device FRAMEMILL_BENCH_ENCODERS=2 timeout "$(left)" \
            ./framemill-bench "$clip" "$OUT/face-$m.pt" cuda 1 >"$OUT/faces-k$k-$m.log" 2>&1)
          echo "exit $?"
          grep -vE "^  model \(batch|^run " "$OUT/faces-k$k-$m.log" | grep -E "^face mode|^(naive|transcode|model|framemill|steady)" |
            cut -c1-160
        done
      done
      log "faces: fps (whole job; framemill's steady-state pipeline in brackets)"
      printf '%-3s %-9s %8s %8s %8s %8s %14s\n' K model naive "naive+ec" transcode model "framemill 1w"
      for k in ${FACES_K:-1 2 4}; do
        for m in restore identity; do
          f=$OUT/faces-k$k-$m.log
          [ -f "$f" ] || continue
          fps() { awk -v r="$1" 'index($0, r) == 1 && $0 !~ /^  / { print $(NF-4); exit }' "$f"; }
          steady=$(sed -n 's/^steady state: framemill 1w pipeline \([0-9.]*\) fps.*/\1/p' "$f")
          printf '%-3s %-9s %8s %8s %8s %8s %8s (%s)\n' "$k" "$m" "$(fps 'naive ')" \
            "$(fps 'naive+empty_cache')" "$(fps transcode)" "$(fps 'model (')" "$(fps 'framemill 1w')" "$steady"
        done
      done
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
nvidia-smi --query-gpu=memory.used,memory.total --format=csv
