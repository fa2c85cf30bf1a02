"""Signature rows for a launcher that cannot find the program it was told to start on a compute node: the program
exists where the job was written (the login node, an activated conda env, a loaded module) but not in the
environment the launcher gives the node. The remedy is the node's environment, quoting the program the log names:
activate it inside the batch script (module load, conda activate / source venv/bin/activate before srun), the
program's full path, or PATH passed on (srun --export=ALL, mpirun -x PATH, DeepSpeed's .deepspeed_env for pdsh).
signatures.py splices them in first. A shell's own 'command not found' is launcher_rows.launch_program_missing's
(one row whatever the shell), which gives ENV_REMEDY below where the program is one of ENV_PROGRAMS.

Sources:
- Slurm src/slurmd/slurmstepd/exec_wait / task.c: error("execve(): %s: %m", task->argv[0]) when the task's program
  cannot be executed; the step then ends with the errno as exit code (2, ENOENT).
  The same file's error("execve(): bad interpreter(%s): %m", ...) where the program is a script whose #! line
  names an interpreter the node lacks (a venv's or conda env's python on another file system): BAD_INTERPRETER.
- Open MPI orte/tools/orterun/help-orterun.txt (PRRTE's help-prterun.txt), [orterun:executable-not-found]: '%s was
  unable to find the specified executable file, and therefore did not launch the job', then 'Node:' and
  'Executable:' lines.
- MPICH / Intel MPI's Hydra, src/pm/hydra/utils/launch/launch.c HYDU_create_process: 'execvp error on file %s (%s)'
  from the proxy on each node ('[proxy:0:0@node] HYDU_create_process (utils/launch/launch.c:74): ...').
- The same calls' 'Permission denied' (EACCES): the file is there but not executable (no x bit, a noexec mount, a
  script whose #! interpreter is missing), and 'Exec format error' (ENOEXEC: a script without a #! line, a binary
  for another CPU): another fix, their own row.
- bash's 'command not found' (exit 127) for a program run over pdsh / ssh (DeepSpeed's multinode runner prefixes
  each line with the host: 'node2: bash: deepspeed: command not found'): a non-interactive ssh shell does not read
  the profile that activates the environment (launcher_rows.launch_program_missing, with ENV_REMEDY).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

# Programs that live in a Python environment or a module, not in the base system: missing on a node means the
# node's environment, not the image (the program is there once the environment is activated).
ENV_PROGRAMS = (
    r"(?:torchrun|deepspeed|accelerate|python[\d.]*|pip[\d.]*|conda|horovodrun|mpirun|mpiexec|srun|"
    r"llamafactory-cli|swift|colossalai|composer|lightning|tune|ray)"
)
# Programs a batch script or a shell's profile runs to prepare the job, not the job itself (Lmod's module / ml, the
# driver's nvidia-smi, conda's shell function, a node-info tool): a script goes on without them, so their missing is
# the failure only where nothing of the job ran after (reasoning/setting_refused.drop_went_past)
HELPER_PROGRAMS = (
    r"(?:module|ml|lmod|nvidia-smi|conda|mamba|spack|lsb_release|git|hostname|nvcc|scontrol|squeue|numactl|"
    r"ibstat|ibv_devinfo|lscpu|free)"
)
# a sourced profile script's own line ('/etc/profile.d/lmod.sh: line 20: ', '~/.bashrc: line 3: '): the login
# setup, not the job's script
SOURCED_SCRIPT = r"(?:/profile\.d/\S+|\.bashrc|\.bash_profile|\.profile|/etc/profile|\.zshrc): (?:line )?\d+: "
ENV_REMEDY = (
    "The compute node's PATH lacks {program|the program}: the environment it is in (conda env, venv, module) is "
    "activated where you typed the command, not in the job. Activate it inside the job itself (module load "
    "MODULE, conda activate ENV or source ENV/bin/activate in the batch script before srun / "
    "mpirun), or call {program|it} by its full path (which {program|it} on the login node; python -m "
    "torch.distributed.run instead of torchrun), and pass PATH on (srun --export=ALL, mpirun -x PATH -x "
    "LD_LIBRARY_PATH, the ~/.deepspeed_env file DeepSpeed's runner passes to pdsh); check with srun -N1 which "
    "{program|it}. Install {program|it} in the image or on the node only where it is missing altogether."
)

# A program of an environment named by its full path that is not there ('bash: line 1: /home/u/venvs/llm/bin/python:
# No such file or directory'): the environment is missing on the node at that path, not PATH
ENV_PATH_MISSING = (
    "{path|The program's path} does not exist on the compute node: the virtual environment or conda env it belongs "
    "to was made on the login node or on a file system the node does not mount at that path. Put the environment "
    "on a file system every node mounts (the same path), or create it on the node (or in the image); check with "
    "srun -N1 ls -l {path|the path}."
)
# srun itself missing: the script does not run on a SLURM node, or its PATH lost SLURM's commands
SRUN_MISSING = (
    "The srun command is not on the PATH where the script runs: it is not running on a node of a SLURM cluster "
    "(submit it with sbatch there, or launch with torchrun instead of srun), or the script reset PATH or did not "
    "load the cluster's SLURM module (module load slurm); which srun on the login node gives its full path."
)
# mpirun / mpiexec missing: MPI's bin folder is not on PATH in the job
MPI_LAUNCHER_MISSING = (
    "The PATH where the script runs lacks {program|mpirun}: load the MPI the program was built with in the "
    "job script before it (module load openmpi, or PATH=<MPI prefix>/bin:$PATH), or give its full path; for the "
    "other nodes give mpirun --prefix <MPI prefix> (or -x PATH -x LD_LIBRARY_PATH)."
)
# conda missing: conda's shell setup (conda init's lines in ~/.bashrc) is not read by a non-interactive batch shell
CONDA_MISSING = (
    "The batch shell has not initialised conda: conda init writes its setup to ~/.bashrc, which a non-interactive "
    "shell (sbatch, ssh, pdsh) does not read. Source it in the script before conda activate (source "
    "<conda prefix>/etc/profile.d/conda.sh, e.g. ~/miniconda3/etc/profile.d/conda.sh), or call the env's python by "
    "its full path (<conda prefix>/envs/ENV/bin/python)."
)
# Any other program missing on a node (nvidia-smi, a tool of the image): install it there
NODE_PROGRAM_MISSING = (
    "The compute node lacks {path|the program} (not installed there, or not on its PATH): install it in the "
    "image or on every node, or fix the path / PATH that names it; check with srun -N1 which {program|it}."
)
_PROGRAM_END = r"(?:[:'\u2019\")]|\s|$)"


def program_remedies(before: str) -> tuple[tuple[str, str], ...]:
    """remedy_when pairs for a missing program named right after `before` (a row's words before it), shared by the
    shell's, slurmstepd's and Hydra's rows: an environment's program by its full path is the environment missing
    there, srun / mpirun / conda each their own setup, another program of an environment the node's PATH."""
    return (
        (before + r"/\S*/" + ENV_PROGRAMS + _PROGRAM_END, ENV_PATH_MISSING),
        (before + r"(?:\S*/)?srun" + _PROGRAM_END, SRUN_MISSING),
        (before + r"(?:\S*/)?(?:mpirun|mpiexec)" + _PROGRAM_END, MPI_LAUNCHER_MISSING),
        (before + r"(?:\S*/)?conda" + _PROGRAM_END, CONDA_MISSING),
        (before + r"(?:\S*/)?" + ENV_PROGRAMS + _PROGRAM_END, ENV_REMEDY),
    )


def program_fields(before: str) -> str:
    """fields_re for the same rows: the program's name ('program') and the path the line gives ('path')."""
    return before + r"(?P<path>(?:\S*/)?(?P<program>[^\s/:'\u2019\")]+))"


# slurmstepd's 'bad interpreter(PATH)': the program is a script whose #! line names an interpreter the node lacks
BAD_INTERPRETER = (
    "The script the step runs starts with #!{interpreter|an interpreter} that the compute node does not have: a "
    "virtual environment or conda env made on the login node or another file system, not mounted or not at that "
    "path on the node. Put the environment on a file system every node mounts (the same path), or run the script "
    "through an interpreter the node has (srun python script.py after activating the env in the batch script), "
    "or change its #! line to #!/usr/bin/env python; check with srun -N1 ls -l {interpreter|the interpreter}."
)

_EXECVE = r"execve\(\): "  # slurmstepd's words before the program it could not start
_EXECVP = r"execvp error on file "  # Hydra's

NODE_ENVIRONMENT_SIGNATURES: tuple[Signature, ...] = (
    row(
        "slurm_task_program_missing",
        "execve():",
        (
            r"slurmstepd(?:-\S+)?: error: execve\(\): \S+: No such file or directory",
            # exec_wait's 'execve(): bad interpreter(%s): %m': the script's #! interpreter (a venv's python) is
            # not on the node
            r"slurmstepd(?:-\S+)?: error: execve\(\): bad interpreter\([^)]*\): No such file or directory",
        ),
        era="Slurm slurmstepd, all releases",
        cause="configuration",
        meaning="slurmstepd could not start the job step's program on the compute node: it is not on the PATH the "
        "step runs with (the environment that has it is not activated in the job), so no process of the job ran.",
        remedy=NODE_PROGRAM_MISSING,
        remedy_when=((r"execve\(\): bad interpreter\(", BAD_INTERPRETER), *program_remedies(_EXECVE)),
        reference="https://github.com/SchedMD/slurm/blob/master/src/slurmd/slurmstepd/exec_wait.c; "
        "https://github.com/CSCfi/pytorch-ddp-examples/issues/1",
        fields_re=r"execve\(\): bad interpreter\((?P<interpreter>[^)\s]+)\)|" + program_fields(_EXECVE),
    ),
    row(
        "mpirun_executable_not_found",
        "was unable to find the specified executable",
        r"(?:mpirun|mpiexec|orterun|prterun) was unable to find the specified executable file",
        era="Open MPI (orterun / prterun help text executable-not-found), all releases",
        cause="configuration",
        meaning="mpirun could not find the program it was told to start on a node (its 'Executable:' line names it): "
        "not on that node's PATH, or a misspelled option taken as the program.",
        remedy=(
            "The program mpirun names under 'Executable:' ({program|see the lines below it}) is not on that "
            "node's PATH: give its full path (which {program|python3} where it works), activate its environment in "
            "the job script before mpirun (module load, conda "
            "activate), and pass PATH on to the other nodes (mpirun -x PATH -x LD_LIBRARY_PATH, or --prefix for "
            "Open MPI itself); if it is an option's value, check the option's spelling (mpirun takes the first "
            "word it does not know as the program)."
        ),
        reference="https://github.com/open-mpi/ompi/blob/v4.1.x/orte/tools/orterun/help-orterun.txt",
        # the help text's 'Executable: NAME' line below the message (orterun's ninth line, prterun's sixth)
        fields_re=r"^\s*Executable:\s+(?:\S*/)?(?P<program>[^\s/]+)",
        # up to the help text's closing dashes (not a later job's 'Executable:'); room for a few other processes'
        # lines interleaved into it
        fields_after=30,
        fields_until=r"(?:^|\s)-{20,}\s*$",
    ),
    row(
        "hydra_program_missing",
        "execvp error on file",
        r"execvp error on file \S+ \(No such file or directory\)",
        era="MPICH and Intel MPI (Hydra process manager: mpiexec.hydra, its proxies), all releases",
        cause="configuration",
        meaning="Hydra's proxy on a node could not start the program mpirun was given: it is not on that node's "
        "PATH (its environment is not activated there) or the relative path does not exist in the node's "
        "working directory.",
        remedy=NODE_PROGRAM_MISSING,
        remedy_when=program_remedies(_EXECVP),
        reference="https://github.com/pmodels/mpich/blob/main/src/pm/hydra/lib/utils/launch.c",
        fields_re=program_fields(_EXECVP),
    ),
    row(
        "launch_program_not_executable",
        ("execve():", "execvp error on file"),
        (
            r"slurmstepd(?:-\S+)?: error: execve\(\): \S+: Permission denied",
            r"execvp error on file \S+ \((?:Permission denied|Exec format error)\)",
            r"slurmstepd(?:-\S+)?: error: execve\(\): \S+: Exec format error",
        ),
        era="Slurm slurmstepd, MPICH / Intel MPI Hydra, all releases",
        cause="configuration",
        meaning="The launcher found the program but could not execute it: the file has no execute permission, "
        "sits on a file system mounted noexec, is a script without a #! line (Exec format error) or whose #! "
        "interpreter is missing on the node, or is a binary for another CPU.",
        remedy=(
            "Make '{program|the program}' executable on the node (chmod +x), or start it through its interpreter "
            "(python or bash before it in the srun / mpirun command); check that its file system is not mounted "
            "noexec there, that a script starts with a #! line naming an interpreter the node has, and that a "
            "binary is built for the node's CPU (file {program|the program})."
        ),
        reference="https://github.com/SchedMD/slurm/blob/master/src/slurmd/slurmstepd/exec_wait.c; "
        "https://github.com/pmodels/mpich/blob/main/src/pm/hydra/lib/utils/launch.c",
        fields_re=r"(?:execve\(\): |execvp error on file )(?P<program>\S+?):? \(?(?:Permission denied|Exec format)",
    ),
)

# Rows that are no failure where the run went on past them (one srun step of a batch script, one host of a fan-out):
# the job's own program is the failure only where nothing ran after it (reasoning/setting_refused.WENT_PAST_CODES)
NODE_WENT_PAST_CODES = (
    "slurm_task_program_missing",
    "mpirun_executable_not_found",
    "hydra_program_missing",
    "launch_program_not_executable",
)
