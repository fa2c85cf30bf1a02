"""Signature rows for a Slurm job step whose tasks never started: srun asked slurmd for the step and the node's
slurmstepd failed to set it up, before the program ran. The launch's plugins are the usual cause: the MPI plugin
srun's --mpi names (pmix not built into this Slurm, its PMIx library missing or of another version than the MPI
inside the job's container), the container plugin (NVIDIA pyxis / enroot), or any other SPANK plugin. The program
never ran, so there is no Python error to read: the fix is the launch's configuration, quoting the --mpi value or
plugin the log names. A missing program (slurmstepd's 'execve(): ...') is node_environment.py's; slurmd refusing
or not answering the launch ('Task launch for StepId=... failed on node X: reason') is remote_launch.py's.

Sources (Slurm's own words, github.com/SchedMD/slurm at master):
- src/api/step_launch.c _launch_handler: error("task %u launch failed: %s", ..., slurm_strerror(rc)), one line per
  task of a node whose launch reply carried an error; slurm_step_launch_wait_start: error("timeout waiting for
  task launch, started %d of %d tasks").
- src/srun/launch.c: info("%ps aborted before step completely launched.") when the launch did not start every
  task; error("Application launch failed: %m"); error("Unable to create step for job %u: %m") when slurmctld
  refuses the step (its reason from src/common/slurm_errno.c).
- src/slurmd/slurmstepd/mgr.c: error("Failed mpi_g_slurmstepd_prefork") answers the launch with SLURM_ERROR, which
  slurm_errno.c words 'Unspecified error' (as does a SPANK plugin failing in spank_init); task.c: error("Unable to
  configure MPI plugin: %m").
- src/common/plugin.c: 'Couldn't load specified plugin name for %s: %s' (older releases 'Couldn't find the
  specified plugin name for mpi/X looking at all files', 'cannot find mpi plugin for mpi/X'); src/interfaces/mpi.c:
  'MPI: Cannot create context for %s', 'MPI: Unable to load any plugin', and 'unable to resolve MPI plugin offset
  from plugin_id=%u. This error usually results from a job being submitted against an MPI plugin which was not
  compiled into slurmd but was for job submission command.'; src/srun/srun_job.c: "Invalid MPI type '%s',
  --mpi=list for acceptable types" (older: '"--mpi=X" -- long invalid MPI type, --mpi=list for acceptable types').
- src/plugins/mpi/pmix/mpi_pmix.c and pmixp_debug.h: PMIXP_ERROR(" %s: %s: %s [%d]: %s:%d: " ...) with the
  plugin type mpi/pmix_vN: 'pmi/pmix: can not load PMIx library', 'pmi/pmix: incorrect PMIx library version
  loaded', 'pmixp_stepd_init() failed', 'pmixp_libpmix_init() failed', 'pmixp_libpmix_job_set() failed', ...;
  older releases word them '... [func] mpi/pmix: ERROR: pmixp_stepd_init() failed'.
- src/common/spank.c: 'spank: required plugin %s: %s() failed with rc=%d'.
- OpenPMIx's PMIX_ERROR_LOG: '[host:pid] PMIX ERROR: %s in file %s at line %d' (the PMIx library inside the
  job's processes: a PMIx version the server side does not speak), and Open MPI's help text 'The application
  appears to have been direct launched using "srun", but OMPI was not built with SLURM's PMI support'
  (ompi/mca/rte/orte/help-orte-runtime / ess_singleton).
- NVIDIA/pyxis pyxis_slurmstepd.c: 'pyxis: failed to import docker image: %s', 'pyxis: importer %s failed with
  exit code %d', 'pyxis: failed to create container filesystem for image: %s', 'pyxis: container start failed
  with error code: %d', 'pyxis: failed to start container', 'pyxis: container exited too soon', 'pyxis:
  --container-mounts: source path does not exist: %s'; enroot's own log follows under 'pyxis: printing enroot
  log file:'. Its info lines ('pyxis: importing docker image', 'pyxis: imported docker image', 'pyxis: creating
  container filesystem') and 'pyxis: ignoring --container-mounts because ...' are no failure.
- The threads: NVIDIA-NeMo/Speech#14829 (NeMo-Run's --mpi=pmix on a Pyxis cluster: 'task 0 launch failed:
  Unspecified error'; --mpi=pmi2 ran), geoschem/geos-chem#822 (Slurm without the pmix plugin),
  pyiron/executorlib#761 (mpi/pmix_v5 without its PMIx library), open-mpi/ompi#12475 (PMIX_MCA_gds=hash).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

SLURM = "https://github.com/SchedMD/slurm/blob/master/"
PYXIS = "https://github.com/NVIDIA/pyxis/blob/master/pyxis_slurmstepd.c"

# The MPI plugin a line names: 'mpi/pmix', 'mpi/pmix_v4', "MPI type 'pmix'", '"--mpi=pmix"'
_MPI_NAMED = r"(?:mpi/|MPI type '|--mpi=)(?P<mpi>\w+)"
# The launch's own words earlier in the log: srun's command line (a script's 'set -x', NeMo-Run's generated
# sbatch, a launcher's echo), or the variable that stands for --mpi
_MPI_CONTEXT = (
    r"^(?=.*?(?:--mpi[= ]|\bSLURM_MPI_TYPE=)(?P<mpi>\w+))?(?=.*?--container-image[= ](?P<image>[^\s'\"]+))?"
    r".*?(?:--mpi[= ]|\bSLURM_MPI_TYPE=|--container-image[= ])"
)

MPI_TYPES = (
    "srun --mpi=list prints the MPI types this Slurm has; launch with one of them: --mpi=pmi2 (or leave --mpi "
    "out, and unset SLURM_MPI_TYPE, so the cluster's MpiDefault from slurm.conf is used), which Open MPI, MPICH "
    "and NCCL-only PyTorch jobs all start under"
)
MPI_PLUGIN_MISSING = (
    "This Slurm cannot load the MPI plugin the step asked for (--mpi={mpi|the type asked for}): the plugin "
    "is not built into it, or its PMIx library is not installed on the node. " + MPI_TYPES + ". For PMIx itself "
    "an administrator installs the PMIx library this Slurm was built against on every node (libpmix) or "
    "rebuilds Slurm --with-pmix; slurmd and srun must have the same plugins."
)
MPI_SETUP_FAILED = (
    "The step's MPI plugin (--mpi={mpi|pmix}) failed to set the step up on the node, before the program ran: "
    "relaunch with srun --mpi=pmi2, or without --mpi and SLURM_MPI_TYPE so the cluster's MpiDefault is used "
    "(srun --mpi=list shows the types this Slurm has). A PMIx step inside a container (pyxis "
    "--container-image) needs a PMIx in the image that speaks with Slurm's; PMIX_MCA_gds=hash avoids the "
    "shared-memory store that most often differs. slurmd's log on the node says which call failed (scontrol "
    "show config | grep SlurmdLogFile)."
)
LAUNCH_ABORTED = (
    "The step's tasks never started ({reason|see srun's lines}): slurmstepd on the node could not set the step "
    "up, or did not answer, before the program ran. The launch's plugins are the usual cause, the MPI plugin "
    "first (srun --mpi={mpi|pmix is the usual one}, or SLURM_MPI_TYPE; a plugin's failure reaches srun as "
    "'Unspecified error'): relaunch with srun --mpi=pmi2, or without --mpi and SLURM_MPI_TYPE so the "
    "cluster's default is used (srun --mpi=list shows the types this Slurm has); then the container plugin "
    "(pyxis / enroot{image| }: its 'pyxis:' lines) and the other SPANK plugins. slurmd's log on that node "
    "names the call that failed (scontrol show config | grep SlurmdLogFile; an administrator reads it), and a "
    "one-line test (srun -N1 -n1 hostname, then with the same --mpi and --container-image) isolates the "
    "option that breaks the launch."
)
# the reasons slurm_errno.c gives a step's launch whose fix is not a plugin
LAUNCH_REASON_REMEDIES: tuple[tuple[str, str], ...] = (
    (
        r"MPI plugin's pre-launch setup failed|Invalid MPI plugin name",
        MPI_SETUP_FAILED,
    ),
    (
        r"Slurmd could not execve job",
        "slurmstepd could not start the step's program on the node (step {step|the step}): it is not on the PATH "
        "the step runs with, or not executable there; the node's 'execve(): ...' line names it. Give its full "
        "path, or activate its environment in the batch script before srun (srun --export=ALL passes PATH on).",
    ),
    (
        r"Error configuring interconnect",
        "The node's switch / interconnect plugin (Cray Slingshot, HPE) could not set up step {step|the step}: the "
        "cluster, not the job. Rerun excluding the node (--exclude=NODE) and tell the administrator (slurmd's "
        "log: scontrol show config | grep SlurmdLogFile).",
    ),
    (
        r"Job prolog failed|Slurmd could not connect IO|Slurmd could not set up environment",
        "Slurm could not prepare step {step|the step} on the node ({reason|launch failed}): the node's prolog, "
        "its I/O connection back to srun, or the job's environment there. Exclude the node (--exclude=NODE) and "
        "ask the administrator to read slurmd's log on it (scontrol show config | grep SlurmdLogFile).",
    ),
)
# slurmctld's reasons for refusing a step because the job itself is over (slurm_errno.c: ESLURM_ALREADY_DONE,
# ESLURM_JOB_NOT_RUNNING, ESLURM_INVALID_JOB_ID once the job is purged): the step asked for is not the failure, what
# ended the job is; after the run's own clean end it is no failure at all (a post-processing srun after an scancel
# or the time limit: reasoning/setting_refused.drop_went_past)
STEP_CREATE_CODE = "slurm_step_create_refused"
JOB_OVER_REASON = r"Job/step already completing or completed|Job is not running|Invalid job id specified"
# slurmctld's reasons for refusing a step inside the job's allocation
STEP_REFUSED = (
    "Slurm refused to create the step inside job {job|the job}'s allocation ({reason|see the line}): the srun "
    "asks for more than the job holds or for something it does not have. Make the srun options fit the batch "
    "job's (#SBATCH --nodes / --ntasks-per-node / --cpus-per-task / --gpus-per-node / --mem): a step cannot "
    "exceed them, and since Slurm 21.08 srun no longer inherits --cpus-per-task from sbatch (export "
    "SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK); scontrol show job {job|JOBID} shows what the job holds."
)
STEP_REFUSED_REMEDIES: tuple[tuple[str, str], ...] = (
    (
        JOB_OVER_REASON,
        "The step was requested after job {job|the job} had ended or was ending ({reason|completing}): its time "
        "limit, an scancel, or an earlier step's failure ended the allocation first (sacct -j {job|JOBID} -o "
        "JobID,State,ExitCode,Elapsed,Timelimit shows which). The step itself is not the cause.",
    ),
    (
        r"Memory required by task is not available",
        "The step asks for more memory than job {job|the job} holds on a node: match srun's --mem / "
        "--mem-per-cpu / --mem-per-gpu to the batch job's (#SBATCH --mem), or ask for more there; srun "
        "--mem=0 lets a step use all of the job's memory on each node.",
    ),
    (
        r"Invalid generic resource \(gres\) specification",
        "The step asks for GPUs (gres) the job does not hold: request them in the batch job (#SBATCH "
        "--gpus-per-node / --gres=gpu:N) and ask srun for no more than that (srun --gpus-per-task / --gres); "
        "scontrol show job {job|JOBID} lists the job's TRES.",
    ),
)

# Rows of a launch that never ran the program: no failure where the run went on past them (another step of the
# batch script trained after them: reasoning/setting_refused.WENT_PAST_CODES)
SLURM_STEP_WENT_PAST_CODES = (
    "slurm_mpi_plugin_missing",
    "slurm_mpi_step_setup_failed",
    "ompi_not_built_for_srun",
    "pmix_library_error",
    "slurm_step_launch_aborted",
    "slurm_step_create_refused",
    "slurm_spank_plugin_failed",
    "pyxis_image_import_failed",
    "pyxis_container_start_failed",
    "pyxis_mount_source_missing",
)

SLURM_STEP_SIGNATURES: tuple[Signature, ...] = (
    # ---- the MPI plugin --mpi names is not in this Slurm, or cannot load its library ---------------------------
    row(
        "slurm_mpi_plugin_missing",
        (
            "specified plugin name for mpi/",
            "mpi plugin for mpi/",
            "context for mpi/",
            "invalid MPI type",
            "MPI plugin offset",
            "can not load PMIx library",
            "incorrect PMIx library version",
        ),
        (
            r"Couldn't (?:load|find) (?:the )?specified plugin name for mpi/\w+",
            r"cannot find mpi plugin for mpi/\w+",
            r"(?:MPI: )?[Cc]annot create (?:mpi )?context for mpi/\w+",
            r"(?i:invalid MPI type)\b.*--mpi=list",
            r"unable to resolve MPI plugin offset from plugin_id",
            r"pmi/pmix: (?:can not load PMIx library|incorrect PMIx library version)",
        ),
        era="Slurm srun / slurmd (all releases; pmix_vN plugins since 20.02)",
        cause="configuration",
        meaning="The MPI plugin the step was launched with (srun --mpi, SLURM_MPI_TYPE, MpiDefault) is not in this "
        "Slurm or cannot load its PMIx library, so srun did not start the step and the program never ran.",
        remedy=MPI_PLUGIN_MISSING,
        reference=SLURM + "src/interfaces/mpi.c; " + SLURM + "src/common/plugin.c; " + SLURM + "src/srun/"
        "srun_job.c; https://github.com/geoschem/geos-chem/issues/822; https://github.com/pyiron/executorlib/pull/761",
        fields_re=_MPI_NAMED,
    ),
    # ---- the MPI plugin loaded, and failed to set the step up on the node --------------------------------------
    row(
        "slurm_mpi_step_setup_failed",
        ("mpi_g_slurmstepd_prefork", "configure MPI plugin", "pre-launch setup failed", "mpi/pmix"),
        (
            r"Failed mpi_g_slurmstepd_prefork",
            r"Unable to configure MPI plugin",
            r"MPI plugin's pre-launch setup failed",
            # PMIXP_ERROR of the plugin's set-up calls (mpi_pmix.c / pmixp_server.c), new and old wording
            r"mpi/pmix\w*:.*\b(?:pmixp_(?:stepd_init|agent_start|abort_agent_start|libpmix_init|libpmix_job_set|"
            r"info_set|dconn_init|nspaces_init|state_init|dmdx_init)\(\) failed|pmixp_usock_create_srv\b|"
            r"Cannot create process mapping)",
        ),
        era="Slurm slurmstepd with an MPI plugin (pmix, pmix_vN, pmi2), all releases",
        cause="configuration",
        meaning="The step's MPI plugin failed to set the step up on the compute node (PMIx server, its library, "
        "the process map), so slurmstepd started none of its tasks.",
        remedy=MPI_SETUP_FAILED,
        reference=SLURM + "src/slurmd/slurmstepd/mgr.c; " + SLURM + "src/plugins/mpi/pmix/mpi_pmix.c; "
        "https://github.com/open-mpi/ompi/issues/12475",
        fields_re=r"mpi/(?P<mpi>\w+)",
        context_re=_MPI_CONTEXT,
    ),
    # ---- Open MPI started by srun without a PMI it can speak --------------------------------------------------
    row(
        "ompi_not_built_for_srun",
        "direct launched using",
        r"appears to have been direct launched using \"?srun\"?",
        era="Open MPI 2.x-4.x (ess singleton's help text)",
        cause="configuration",
        meaning="srun started the ranks directly, and this Open MPI has no support for the PMI the step gave it, "
        "so every rank stopped in MPI_Init.",
        remedy=(
            "Start the ranks with a PMI both sides have: srun --mpi=pmix where Slurm has it (srun --mpi=list "
            "shows it; this launch's MPI type: {mpi|not shown}), or srun --mpi=pmi2 with an Open MPI built "
            "--with-pmi; else use mpirun inside the allocation (salloc / sbatch, then mpirun -np N), which needs "
            "no PMI from Slurm."
        ),
        reference="https://github.com/open-mpi/ompi/blob/v4.1.x/orte/mca/ess/singleton/help-ess-singleton.txt; "
        "https://docs.open-mpi.org/en/main/launching-apps/slurm.html",
        context_re=_MPI_CONTEXT,
    ),
    # ---- the PMIx library inside the job's processes ---------------------------------------------------------
    # OpenPMIx's PMIX_ERROR_LOG: printed by the MPI's PMIx client when the server (Slurm's PMIx plugin, of another
    # PMIx version) answers what it cannot unpack; a run that went on past it (the usual 'OUT-OF-RESOURCE in file
    # base/bfrop_base_unpack.c') stays a note (reasoning/setting_refused.py)
    row(
        "pmix_library_error",
        "PMIX ERROR",
        r"\bPMIX ERROR: [\w-]+ in file \S+ at line \d+",
        era="OpenPMIx (v2-v5) client and server libraries",
        cause="configuration",
        meaning="The PMIx library in the job's processes reported an error talking to the launcher's PMIx server "
        "(Slurm's PMIx plugin, or mpirun's PRRTE): most often two PMIx versions that do not agree.",
        remedy=(
            "PMIx reported {pmix_error|an error} in {pmix_file|its file}: the PMIx of the job's MPI (in the "
            "container image, or the MPI's own) and the launcher's differ. Use one PMIx on both sides (the MPI "
            "built --with-pmix against the PMIx Slurm uses; srun --mpi=list shows Slurm's pmix_vN), or launch "
            "with srun --mpi=pmi2; PMIX_MCA_gds=hash works around the shared-memory store (gds ds12 / ds21) "
            "mismatch."
        ),
        reference="https://github.com/openpmix/openpmix/blob/master/src/util/pmix_error.h; "
        "https://github.com/open-mpi/ompi/issues/12146; https://github.com/open-mpi/ompi/issues/12475",
        fields_re=r"PMIX ERROR: (?P<pmix_error>[\w-]+) in file (?P<pmix_file>\S+) at line",
        confidence="medium",
    ),
    # ---- srun's own words for a step whose tasks never started -----------------------------------------------
    row(
        "slurm_step_launch_aborted",
        (
            "launch failed:",
            "aborted before step completely launched",
            "timeout waiting for task launch",
            "Application launch failed",
        ),
        (
            r"\btask \d+ launch failed: ",
            r"aborted before step completely launched",
            r"timeout waiting for task launch, started \d+ of \d+ tasks",
            r"Application launch failed: ",
        ),
        era="Slurm srun (src/api/step_launch.c, src/srun/launch.c), all releases",
        cause="configuration",
        meaning="srun's step never started its tasks: slurmstepd on the node failed to set the step up (an MPI "
        "or container plugin, the node's environment) or never answered, so the job's program never ran.",
        remedy=LAUNCH_ABORTED,
        remedy_when=LAUNCH_REASON_REMEDIES,
        reference=SLURM + "src/api/step_launch.c; " + SLURM + "src/srun/launch.c; " + SLURM + "src/slurmd/"
        "slurmstepd/mgr.c; https://github.com/NVIDIA-NeMo/Speech/issues/14829",
        fields_re=(
            r"(?:launch failed: |(?=timeout waiting for task launch))(?P<reason>[^\n]+?)\s*$|"
            r"(?P<step>StepId=\S+?|\d+\.\d+)\.? aborted before"
        ),
        fields_after=6,  # srun's 'task N launch failed: REASON' lines below its 'aborted before' line
        context_re=_MPI_CONTEXT,
        confidence="medium",
    ),
    # ---- slurmctld refused to create the step inside the allocation ------------------------------------------
    row(
        "slurm_step_create_refused",
        "Unable to create step for job",
        r"Unable to create (?:job )?step for job \d+: ",
        era="Slurm srun (src/srun/launch.c), all releases",
        cause="configuration",
        meaning="Slurm refused to create the job step inside the allocation (the reason follows the job id), so "
        "srun started nothing.",
        remedy=STEP_REFUSED,
        remedy_when=STEP_REFUSED_REMEDIES,
        reference=SLURM + "src/srun/launch.c; " + SLURM + "src/common/slurm_errno.c; "
        "https://slurm.schedmd.com/srun.html",
        fields_re=r"for job (?P<job>\d+): (?P<reason>[^\n]+?)\s*$",
    ),
    # ---- a SPANK plugin (pyxis, a site's own) failed on the node ----------------------------------------------
    row(
        "slurm_spank_plugin_failed",
        "spank: required plugin",
        r"spank: required plugin \S+: \w+\(\) failed with rc=-?\d+",
        era="Slurm SPANK plugins (src/common/spank.c), all releases",
        cause="configuration",
        meaning="A SPANK plugin that plugstack.conf marks required failed while slurmstepd set up the step, so the "
        "step's tasks never started.",
        remedy=(
            "The required SPANK plugin {plugin|of the step} failed in {callback|its callback} (rc={rc|?}): its "
            "own lines just before this one say why (pyxis prints its own 'pyxis:' lines). Fix what they name (the "
            "container image, a mount, the option's value), or launch without the option that plugin serves "
            "(--container-image for pyxis); if it fails for every job, the plugin or node is broken: tell the "
            "administrator (slurmd's log: scontrol show config | grep SlurmdLogFile)."
        ),
        reference=SLURM + "src/common/spank.c",
        fields_re=r"required plugin (?P<plugin>\S+): (?P<callback>\w+)\(\) failed with rc=(?P<rc>-?\d+)",
    ),
    # ---- NVIDIA pyxis / enroot: the container never started ---------------------------------------------------
    row(
        "pyxis_image_import_failed",
        ("pyxis: failed to import", "pyxis: importer"),
        (r"pyxis: failed to import docker image: \S+", r"pyxis: importer \S+ failed with exit code \d+"),
        era="NVIDIA pyxis (SPANK plugin) with enroot, all releases",
        cause="configuration",
        meaning="pyxis could not import the container image the step asked for (srun --container-image), so the "
        "step never started.",
        remedy=(
            "enroot could not import {image|the image}: check its name and tag (pyxis writes a registry with "
            "'#': --container-image=nvcr.io#nvidia/pytorch:24.05-py3), the registry's credentials for enroot "
            "(~/.config/enroot/.credentials, 'machine nvcr.io login $oauthtoken password KEY'), and free space "
            "where enroot stores layers (ENROOT_CACHE_PATH, ENROOT_DATA_PATH); the 'pyxis:' lines after it "
            "are enroot's own log, and enroot import docker://{image|IMAGE} on the node shows the same error. "
            "Importing once to a squashfs file (enroot import -o image.sqsh) and passing its path avoids the "
            "pull on every node."
        ),
        reference=PYXIS + "; https://github.com/NVIDIA/enroot/blob/master/doc/cmd/import.md",
        fields_re=r"docker image: (?P<image>\S+)",
    ),
    row(
        "pyxis_container_start_failed",
        (
            "pyxis: container start",
            "pyxis: failed to start container",
            "pyxis: container exited too soon",
            "pyxis: failed to create container filesystem",
        ),
        (
            r"pyxis: container start failed with error code: \d+",
            r"pyxis: container start error: ",
            r"pyxis: failed to start container",
            r"pyxis: container exited too soon",
            r"pyxis: failed to create container filesystem for image: \S+",
        ),
        era="NVIDIA pyxis (SPANK plugin) with enroot, all releases",
        cause="configuration",
        meaning="pyxis imported the image but enroot could not create or start the container on the node, so "
        "the step's tasks never started.",
        remedy=(
            "enroot could not start the container{image| }: read enroot's own log that pyxis prints below "
            "('pyxis: printing enroot log file:' and the 'pyxis:' lines after it). An image whose ENTRYPOINT "
            "does not return (or exits) needs --no-container-entrypoint; a full disk where enroot unpacks "
            "(ENROOT_DATA_PATH, ENROOT_RUNTIME_PATH) or a --container-mounts path the node lacks stops it too; "
            "enroot create / enroot start on the node reproduce it."
        ),
        reference=PYXIS + "; https://github.com/NVIDIA/enroot/blob/master/doc/configuration.md",
        fields_re=r"for image: (?P<image>\S+)",
    ),
    row(
        "pyxis_mount_source_missing",
        "source path does not exist",
        r"pyxis: --container-mounts: source path does not exist: \S+",
        era="NVIDIA pyxis (SPANK plugin), all releases",
        cause="configuration",
        meaning="A --container-mounts source path does not exist on the compute node, so pyxis did not start the "
        "container.",
        remedy=(
            "{path|The mount's source path} does not exist on the compute node: give a path every node has (a "
            "shared file system, the same mount point), create it in the batch script before srun, or drop it "
            "from --container-mounts (SRC:DST[:FLAGS], comma-separated)."
        ),
        reference=PYXIS,
        fields_re=r"source path does not exist: (?P<path>\S+)",
    ),
)
