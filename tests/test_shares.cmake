# Included by ctest (TEST_INCLUDE_FILES) after the discovered doctest cases are defined: how much
# of a core each test keeps busy, as ctest's PROCESSORS in quarter cores. scripts/test.sh runs
# ctest with four slots a core; a test takes 4 (a core) unless it is listed here. Tests that
# mostly wait (on Slurm's scheduler, a worker's timeout, a backoff, a hung part) take fewer slots
# and run beside the others instead of holding a core idle; a test that keeps two cores busy
# takes 8. A name that matches no test (renamed, or not built here) changes nothing: that test
# takes a core.
#
# Measured, not guessed: tests/measure_test_shares.py BUILD_DIR -j $(nproc) runs the suite on an
# idle machine and rewrites the lines below (each with the CPU and wall seconds it saw). The lines
# below are from a first measurement, 2026-12-06, 2 cores: CPU seconds from one ctest -j2 run of
# 89911a6 while other builds shared the machine (the tests it reached), wall seconds from the
# clean-clone run of 3fc4144 (BENCHMARKS.md, the test suite on 2 cores).
set_tests_properties([==[integration:cli: --help on every command is usage on stdout with exit 0, bad usage is exit 2]==] PROPERTIES PROCESSORS 3)  # 1 s CPU in 2 s
set_tests_properties([==[integration:faults: a decoder killed mid-job is restarted at its frame and the output is exact]==] PROPERTIES PROCESSORS 5)  # 5 s CPU in 4 s
set_tests_properties([==[integration:faults: the decoder fault hook ends the stream at its frame when ffmpeg has finished]==] PROPERTIES PROCESSORS 3)  # 1 s CPU in 1 s
set_tests_properties([==[integration:geometry: interlaced TFF and BFF: deinterlaced and flagged progressive, or kept]==] PROPERTIES PROCESSORS 3)  # 21 s CPU in 32 s
set_tests_properties([==[integration:live mux: the output joined beside the render has the packets of the join after it]==] PROPERTIES PROCESSORS 5)  # 18 s CPU in 16 s
set_tests_properties([==[integration:model import: a job whose input the model's card refuses fails before any frame]==] PROPERTIES PROCESSORS 3)  # 2 s CPU in 3 s
set_tests_properties([==[integration:model import: esrgan-slim-x2 upscales a real clip 2x, frame-exact, within a GAN margin of bicubic]==] PROPERTIES PROCESSORS 3)  # 9 s CPU in 12 s
set_tests_properties([==[integration:model import: esrgan-slim-x2 writes a model and its card, which info prints]==] PROPERTIES PROCESSORS 2)  # 8 s CPU in 15 s
set_tests_properties([==[integration:named files: a card whose sha256 is not its model's fails the job, the right one runs]==] PROPERTIES PROCESSORS 2)  # 4 s CPU in 7 s
set_tests_properties([==[integration:named files: a face detector outside the model roots is refused before any parse]==] PROPERTIES PROCESSORS 3)  # 1 s CPU in 1 s
set_tests_properties([==[integration:named files: a face table outside the input roots, or a FIFO, is refused at once]==] PROPERTIES PROCESSORS 3)  # 2 s CPU in 2 s
set_tests_properties([==[integration:named files: a malformed card's error names the line, never the bytes it read]==] PROPERTIES PROCESSORS 3)  # 1 s CPU in 1 s
set_tests_properties([==[integration:named files: a model card linked outside the model roots is refused, its bytes unread]==] PROPERTIES PROCESSORS 2)  # 1 s CPU in 2 s
set_tests_properties([==[integration:parts: three parts and a stitch give the one-machine output, each part seeking]==] PROPERTIES PROCESSORS 3)  # 17 s CPU in 24 s
set_tests_properties([==[integration:path attack: a model symlink swapped to an outside model while jobs run]==] PROPERTIES PROCESSORS 2)  # 12 s CPU in 21 s
set_tests_properties([==[integration:path attack: an input symlink swapped to an outside secret while jobs run]==] PROPERTIES PROCESSORS 3)  # 19 s CPU in 27 s
set_tests_properties([==[integration:path attack: links at the output and at the old predictable temp names]==] PROPERTIES PROCESSORS 3)  # 5 s CPU in 7 s
set_tests_properties([==[integration:path attack: playlists and lists inside the input root that name outside files]==] PROPERTIES PROCESSORS 3)  # 2 s CPU in 4 s
set_tests_properties([==[integration:path attack: the output directory swapped and temp names replaced while jobs run]==] PROPERTIES PROCESSORS 3)  # 15 s CPU in 22 s
set_tests_properties([==[integration:preview: --frames outside 1..64 is a usage error, and --help documents it]==] PROPERTIES PROCESSORS 2)  # 0 s CPU in 1 s
set_tests_properties([==[integration:preview: a before/after sheet of K rows, an estimate, and only the samples decoded]==] PROPERTIES PROCESSORS 5)  # 11 s CPU in 11 s
set_tests_properties([==[integration:real footage: every shared clip through identity keeps frames, rate, picture, audio]==] PROPERTIES PROCESSORS 3)  # 48 s CPU in 61 s
set_tests_properties([==[integration:recovery: 20 SIGKILLs of random workers at random moments change nothing]==] PROPERTIES PROCESSORS 8)  # 55 s CPU in 22 s
set_tests_properties([==[integration:recovery: a chunk held while the worker starts the next is sent again when it crashes]==] PROPERTIES PROCESSORS 2)  # 8 s CPU in 18 s
set_tests_properties([==[integration:recovery: a chunk that always crashes its worker fails the job with its frame range]==] PROPERTIES PROCESSORS 5)  # 19 s CPU in 17 s
set_tests_properties([==[integration:recovery: a leaking model is recycled by its memory limit and the output stays exact]==] PROPERTIES PROCESSORS 3)  # 18 s CPU in 24 s
set_tests_properties([==[integration:recovery: a worker binary that cannot be started for a moment delays the replacement, and the job finishes]==] PROPERTIES PROCESSORS 3)  # 16 s CPU in 23 s
set_tests_properties([==[integration:recovery: workers get PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF from the config]==] PROPERTIES PROCESSORS 3)  # 7 s CPU in 9 s
set_tests_properties([==[integration:report: a job whose worker always crashes still gets a report that says it failed]==] PROPERTIES PROCESSORS 5)  # 7 s CPU in 6 s
set_tests_properties([==[integration:report: a real job's report renders in Chromium with its plots, markers and stills]==] PROPERTIES PROCESSORS 5)  # 17 s CPU in 16 s
set_tests_properties([==[integration:report: a report that cannot be written is a warning, never a failed job]==] PROPERTIES PROCESSORS 5)  # 11 s CPU in 9 s
set_tests_properties([==[integration:run: stopped or killed at a random segment, the same command continues frame-exact]==] PROPERTIES PROCESSORS 5)  # 27 s CPU in 25 s
set_tests_properties([==[integration:sandbox: a model that reads a file outside its roots is refused (and reads it unconfined)]==] PROPERTIES PROCESSORS 3)  # 6 s CPU in 8 s
set_tests_properties([==[integration:sandbox: a model that writes a file is refused, the file unchanged (and written unconfined)]==] PROPERTIES PROCESSORS 3)  # 6 s CPU in 8 s
set_tests_properties([==[integration:sandbox: a worker cannot connect a TCP socket (and can unconfined)]==] PROPERTIES PROCESSORS 3)  # 5 s CPU in 7 s
set_tests_properties([==[integration:sandbox: a worker cannot fork (and can unconfined)]==] PROPERTIES PROCESSORS 3)  # 5 s CPU in 7 s
set_tests_properties([==[integration:sandbox: a worker cannot signal the supervisor (and can unconfined)]==] PROPERTIES PROCESSORS 1)  # 0 s CPU in 6 s
set_tests_properties([==[integration:service metrics: "metrics_textfile": "" writes no file]==] PROPERTIES PROCESSORS 2)  # 1 s CPU in 2 s
set_tests_properties([==[integration:service metrics: a chunk that crashes every worker: the crashes and the failed job]==] PROPERTIES PROCESSORS 3)  # 8 s CPU in 14 s
set_tests_properties([==[integration:service: --json, the on_job_end hook once per job, and journal priorities]==] PROPERTIES PROCESSORS 3)  # 5 s CPU in 8 s
set_tests_properties([==[integration:service: a job that kills the supervisor max_job_starts times is filed as crashed, the next job runs, and retry finishes it]==] PROPERTIES PROCESSORS 3)  # 9 s CPU in 12 s
set_tests_properties([==[integration:service: poison job files among good jobs: each filed with a reason, the service never stops and no good job waits]==] PROPERTIES PROCESSORS 3)  # 18 s CPU in 23 s
set_tests_properties([==[integration:slurm: 3 parts and a stitch equal the one-machine run, and a requeued part resumes]==] PROPERTIES PROCESSORS 1)  # 11 s CPU in 67 s
set_tests_properties([==[integration:slurm: a task cancelled mid-part is run again by resume, from its own done-log]==] PROPERTIES PROCESSORS 2)  # 11 s CPU in 26 s
set_tests_properties([==[integration:slurm: the service resumes once a job whose part failed, and files it in done/]==] PROPERTIES PROCESSORS 2)  # 5 s CPU in 15 s
set_tests_properties([==[integration:slurm: the service with backend slurm files a submitted job in done/ with its output]==] PROPERTIES PROCESSORS 2)  # 3 s CPU in 10 s
set_tests_properties([==[integration:spool: submit works on a fresh install, another user can neither move nor cancel a job, its submitter can cancel it]==] PROPERTIES PROCESSORS 3)  # 4 s CPU in 7 s
set_tests_properties([==[integration:spool: the service writes an output only where its submitter could, and overwrites only what its submitter could replace]==] PROPERTIES PROCESSORS 3)  # 8 s CPU in 10 s
set_tests_properties([==[integration:spool: warm workers serve their submitter's next job of the same model, never another user's]==] PROPERTIES PROCESSORS 3)  # 12 s CPU in 17 s
# From process accounting (acct) over one scripts/test.sh run of 9a67653, 2026-12-06, 2 cores,
# the machine nearly idle: the tests that held a core and kept far less of it busy.
set_tests_properties([==[bench_night_short]==] PROPERTIES PROCESSORS 3)  # 55 s CPU in 104 s
set_tests_properties([==[layering_includes_run_one_way]==] PROPERTIES PROCESSORS 1)  # 2 s CPU in 10 s
set_tests_properties([==[slurm_local_cluster_stop]==] PROPERTIES PROCESSORS 1)  # 0 s CPU in 6 s
set_tests_properties([==[integration:seek: frame-exact on variable-rate, open-GOP, MPEG-TS, VP9 and timecode files]==] PROPERTIES PROCESSORS 3)  # 15 s CPU in 20 s
set_tests_properties([==[integration:start: decoding begins while the workers start when the arena's size is known, and a wrong guess's frames are dropped]==] PROPERTIES PROCESSORS 3)  # 13 s CPU in 18 s
set_tests_properties([==[integration:spool: a user's backlog at priority 1000 with back-dated files does not hold another user's job, the queue's age is not back-dated, queued files are private, and the backlog past max_queued_per_user is refused]==] PROPERTIES PROCESSORS 5)  # 12 s CPU in 11 s
set_tests_properties([==[integration:shm security: a worker that lies in its results, rings, state, heartbeat or probe is killed for it, and the job fails cleanly or stays frame-exact]==] PROPERTIES PROCESSORS 3)  # 14 s CPU in 21 s
set_tests_properties([==[integration:service: a spare worker started before the job loads its model, and a killed one is replaced later]==] PROPERTIES PROCESSORS 3)  # 10 s CPU in 18 s
set_tests_properties([==[integration:service: a probe that never ends fails its job with timed_out, and the service and its watchdog go on]==] PROPERTIES PROCESSORS 2)  # 4 s CPU in 14 s

# The longest tests start first: ctest orders by COST, which a clean clone (CI) has no history
# for, so these would otherwise start in the order they are defined and some of the longest end
# last, beside an idle core. Their wall seconds in the clean-clone run of 2d21451, 2026-12-06.
set_tests_properties([==[integration:real footage: every shared clip through identity keeps frames, rate, picture, audio]==] PROPERTIES COST 49)
set_tests_properties([==[fuzz_build]==] PROPERTIES COST 42)
set_tests_properties([==[integration:service: drains 18 jobs, good ones to done/, bad ones to failed/ with their reason]==] PROPERTIES COST 37)
set_tests_properties([==[integration:slurm: 3 parts and a stitch equal the one-machine run, and a requeued part resumes]==] PROPERTIES COST 36)
set_tests_properties([==[integration:recovery: 20 SIGKILLs of random workers at random moments change nothing]==] PROPERTIES COST 35)
set_tests_properties([==[integration:start: decoding begins while the workers start when the arena's size is known, and a wrong guess's frames are dropped]==] PROPERTIES COST 32)
set_tests_properties([==[integration:recovery: a worker binary that cannot be started for a moment delays the replacement, and the job finishes]==] PROPERTIES COST 32)
set_tests_properties([==[integration:geometry: display matrices (90, 180, 270, mirrored) come out upright, no matrix]==] PROPERTIES COST 29)
set_tests_properties([==[integration:slurm: a task cancelled mid-part is run again by resume, from its own done-log]==] PROPERTIES COST 28)
set_tests_properties([==[integration:geometry: interlaced TFF and BFF: deinterlaced and flagged progressive, or kept]==] PROPERTIES COST 28)
set_tests_properties([==[integration:device colour conversion: colours match ffmpeg's for BT.601, BT.709 and full range]==] PROPERTIES COST 27)
set_tests_properties([==[thread_safety]==] PROPERTIES COST 26)
set_tests_properties([==[integration:shm security: a worker that lies in its results, rings, state, heartbeat or probe is killed for it, and the job fails cleanly or stays frame-exact]==] PROPERTIES COST 25)
set_tests_properties([==[integration:recovery: a worker that crashes mid-chunk is replaced and the output is unchanged]==] PROPERTIES COST 24)
set_tests_properties([==[integration:run: a changed model or --fresh starts over, and one output is rendered by one run]==] PROPERTIES COST 24)
set_tests_properties([==[integration:run: stopped or killed at a random segment, the same command continues frame-exact]==] PROPERTIES COST 22)
set_tests_properties([==[integration:recovery: a leaking model is recycled by its memory limit and the output stays exact]==] PROPERTIES COST 22)
set_tests_properties([==[integration:path attack: an input symlink swapped to an outside secret while jobs run]==] PROPERTIES COST 21)
set_tests_properties([==[packaging_deb_installs_and_enables_the_service]==] PROPERTIES COST 21)
set_tests_properties([==[integration:face mode: a service killed mid-job resumes with its face table, frame for frame]==] PROPERTIES COST 20)
set_tests_properties([==[integration:service: poison job files among good jobs: each filed with a reason, the service never stops and no good job waits]==] PROPERTIES COST 20)
set_tests_properties([==[integration:service: a spare worker started before the job loads its model, and a killed one is replaced later]==] PROPERTIES COST 20)
set_tests_properties([==[integration:face mode: a talking head with the detector: one face a frame, changed, the rest not]==] PROPERTIES COST 20)
set_tests_properties([==[integration:recovery: a chunk held while the worker starts the next is sent again when it crashes]==] PROPERTIES COST 20)
set_tests_properties([==[integration:seek: a decoder started at frame k gives frame k on, on the real clips]==] PROPERTIES COST 20)
set_tests_properties([==[integration:seek: frame-exact on variable-rate, open-GOP, MPEG-TS, VP9 and timecode files]==] PROPERTIES COST 20)
set_tests_properties([==[integration:parts: three parts and a stitch give the one-machine output, each part seeking]==] PROPERTIES COST 20)
set_tests_properties([==[integration:service: a warm job takes the previous job's arena, another frame size gets its own]==] PROPERTIES COST 19)
set_tests_properties([==[integration:depth: 10-bit, 12-bit, 4:2:2, 4:4:4 and full range keep depth, layout and range]==] PROPERTIES COST 19)
set_tests_properties([==[integration:service gpus: SIGTERM with two jobs running keeps both, and the restart finishes both]==] PROPERTIES COST 19)
set_tests_properties([==[integration:service gpus: warm workers are kept per GPU set and model]==] PROPERTIES COST 18)
set_tests_properties([==[integration:preview: an upscaler's rows are 1:1 crops of its output beside the source scaled there]==] PROPERTIES COST 18)
set_tests_properties([==[integration:face mode: a leaking face model is recycled by its memory limit, every frame in place]==] PROPERTIES COST 18)
set_tests_properties([==[integration:frame-exact: 2,050 indexed frames through identity with 3 workers keep order and audio]==] PROPERTIES COST 17)
set_tests_properties([==[integration:service: a worker still loading when a short job ends is kept for the next ones]==] PROPERTIES COST 17)
set_tests_properties([==[integration:upscale2x on a real clip doubles width and height exactly]==] PROPERTIES COST 17)
set_tests_properties([==[integration:variable frame rate: every frame keeps its source timestamp, and its place]==] PROPERTIES COST 17)
set_tests_properties([==[integration:service: SIGKILL mid-job, restart: finished segments are kept as they are and the output is frame-exact]==] PROPERTIES COST 16)
set_tests_properties([==[integration:service: SIGTERM mid-job exits 0 with nothing left running, and the restart finishes]==] PROPERTIES COST 16)
set_tests_properties([==[integration:recovery: a chunk that always crashes its worker fails the job with its frame range]==] PROPERTIES COST 16)
set_tests_properties([==[integration:model import: esrgan-slim-x2 writes a model and its card, which info prints]==] PROPERTIES COST 16)
set_tests_properties([==[integration:tiles: a job in tiles writes the frames of the same job on whole frames]==] PROPERTIES COST 15)
