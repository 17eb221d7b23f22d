"""Plain-language explanations of why a job failed or waits: one data-driven catalogue.

Each entry says what happened, what to do next, and which evidence it rests on. The
sources are the portal status, Slurm's state, exit code and signal, the pending reason,
sbatch's rejection message, and the end of the job's output (a bounded tail: never the
whole log). Instructors' hints (courses.hints) are matched with a time bound.

The rules' work is linear in the log: they see at most MAX_RULE_LINES lines of at most
MAX_LINE_CHARS characters each (`rule_lines`), and every log pattern is either a plain
alternation of words or anchored at the start of the line, so none is retried from every
position of a long line.
"""

import re
from dataclasses import dataclass, field

from django.conf import settings

from courses.hints import hints_matching
from jobs import files
from jobs.models import ACTIVE_IN_SLURM, Job, Status

#: What the rules look at: the last lines of the output tails, each cut to its first characters.
MAX_RULE_LINES = 2000
MAX_LINE_CHARS = 1000


def rule_lines(lines: list[str]) -> list[str]:
    """The bounded part of the output the rules look at (hints search the tails with a time bound)."""
    return [line[:MAX_LINE_CHARS] for line in lines[-MAX_RULE_LINES:]]


@dataclass(frozen=True)
class Rule:
    key: str
    title: str
    summary: str
    next_step: str
    statuses: frozenset[str] = frozenset({Status.FAILED})
    states: frozenset[str] = frozenset()
    log: re.Pattern | None = None
    message: re.Pattern | None = None
    exit_codes: frozenset[int] = frozenset()
    signals: frozenset[int] = frozenset()
    reason: re.Pattern | None = None
    suggest: dict[str, int] = field(default_factory=dict)  # resource -> factor for a retry

    def matches(self, job: Job, log_lines: list[str]) -> tuple[bool, str]:
        """Whether the rule applies, and the evidence line it matched (if any)."""
        if job.status not in self.statuses:
            return False, ""
        if self.states and job.slurm_state not in self.states:
            return False, ""
        if self.exit_codes and job.exit_code not in self.exit_codes:
            return False, ""
        if self.signals and job.exit_signal not in self.signals:
            return False, ""
        if self.reason and not self.reason.search(job.reason or "None"):
            return False, ""
        if self.message and not self.message.search(job.message):
            return False, ""
        if self.log:
            for line in reversed(log_lines):
                if self.log.search(line):
                    return True, line.strip()
            return False, ""
        return True, ""


def _re(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


REJECTED = frozenset({Status.REJECTED})
PENDING = frozenset({Status.PENDING})
ENDED = frozenset({Status.FAILED, Status.CANCELLED})
CONTACT = "If this keeps happening, tell your TA; it is not something you can fix from the portal."

# Order matters: the first rule that matches explains the job.
CATALOGUE: tuple[Rule, ...] = (
    # --- An interactive session whose node cannot start JupyterLab (jobs.sessions) ---
    Rule(
        "no-jupyter",
        "JupyterLab is not available on the cluster's nodes",
        "The session's job started, but the node it ran on has no 'jupyter' command after the portal's set-up "
        "line (the operators' setting LABQUEUE_INTERACTIVE_SETUP), so no notebook could open.",
        "Tell your TA or the operators: LABQUEUE_INTERACTIVE_SETUP must make JupyterLab available on the nodes "
        "(for example 'module load jupyterlab'). Start the session again once they confirm it is fixed; this "
        "session used almost none of your budget.",
        log=_re(r"^LabQueue: JupyterLab is not available"),
    ),
    # --- Refused at submission (sbatch said no) ---
    Rule(
        "no-cluster-account",
        "You have no account on the cluster yet",
        "The portal tried to run the job as your cluster user, but the cluster has no such account.",
        "Ask your instructor or research computing to create your cluster account, then press Retry.",
        statuses=REJECTED,
        message=_re(r"cluster has no account"),
    ),
    Rule(
        "invalid-account",
        "The course is not set up for you on the cluster",
        "Slurm does not know the course's account, or you are not yet a member of it.",
        "Tell your instructor or TA: the course roster may not have reached the cluster yet. "
        "Retry once they confirm it is fixed.",
        statuses=REJECTED,
        message=_re(r"Invalid account|account/partition combination"),
    ),
    Rule(
        "invalid-partition",
        "The course's partition does not exist",
        "The job asked for a partition (group of computers) that the cluster does not have.",
        "Tell your instructor: the course settings name a partition the cluster does not know. " + CONTACT,
        statuses=REJECTED,
        message=_re(r"invalid partition"),
    ),
    Rule(
        "time-limit-invalid",
        "The job asks for more time than the cluster allows",
        "Slurm refused the requested wall time for this partition.",
        "Retry with less time (minutes) in the resources.",
        statuses=REJECTED,
        message=_re(r"time limit is invalid"),
        suggest={"minutes": 0},
    ),
    Rule(
        "over-policy",
        "The job is over the course's limits on the cluster",
        "Slurm refused the job because it would break an accounting or QOS limit of the course "
        "(GPUs, jobs at once, or the time budget).",
        "Wait for your other jobs to finish or ask for fewer resources, then retry.",
        statuses=REJECTED,
        message=_re(r"accounting/QOS policy|QOSMax|AssocMax|AssocGrp"),
    ),
    Rule(
        "invalid-gres",
        "The GPU request is not valid here",
        "Slurm does not recognise the GPU request for this partition.",
        "Ask for a number of GPUs the course allows. " + CONTACT,
        statuses=REJECTED,
        message=_re(r"generic resource|gres"),
    ),
    Rule(
        "reservation-denied",
        "The lab reservation is not open to this job",
        "The job asked for a lab reservation it may not use, or the lab is over.",
        "Submit again; outside the lab time jobs run in the normal queue.",
        statuses=REJECTED,
        message=_re(r"reservation"),
    ),
    Rule(
        "rejected",
        "The cluster refused the job",
        "Slurm did not accept the job. Its message is shown below.",
        "Read Slurm's message; if it is about your request, change it and retry. " + CONTACT,
        statuses=REJECTED,
    ),
    # --- Ended by Slurm for a reason of its own ---
    Rule(
        "timeout",
        "The job ran out of time",
        "Slurm stopped the job when it reached its wall-time limit.",
        "Retry with more time, or make the program save progress and finish sooner.",
        states=frozenset({"TIMEOUT"}),
        suggest={"minutes": 2},
    ),
    Rule(
        "cuda-out-of-memory",
        "The GPU ran out of memory",
        "Your program asked the GPU for more memory than it has.",
        "Use a smaller batch size or model, then retry. More GPUs do not help a program that uses one.",
        statuses=ENDED,
        log=_re(r"CUDA out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY"),
    ),
    Rule(
        "out-of-memory",
        "The job ran out of memory",
        "The job used more memory (RAM) than it asked for, so it was stopped.",
        "Retry with more memory, or make the program use less (smaller batches, load less data at once).",
        states=frozenset({"OUT_OF_MEMORY"}),
        suggest={"mem_mb": 2},
    ),
    Rule(
        "oom-killed",
        "The job ran out of memory",
        "The job's log shows it was killed for using more memory than it asked for.",
        "Retry with more memory, or make the program use less (smaller batches, load less data at once).",
        log=_re(r"oom[-_ ]kill|Exceeded job memory limit|Out of memory|MemoryError"),
        suggest={"mem_mb": 2},
    ),
    Rule(
        "node-failure",
        "The computer running your job failed",
        "A node of the cluster stopped answering while your job ran. This was not caused by your job.",
        "Press Retry: the job runs again on a healthy node.",
        states=frozenset({"NODE_FAIL", "BOOT_FAIL"}),
    ),
    Rule(
        "preempted",
        "Your job was stopped to make room for higher-priority work",
        "The cluster pre-empted the job, for example for a scheduled lab.",
        "Press Retry, or submit again outside the lab time.",
        states=frozenset({"PREEMPTED"}),
    ),
    Rule(
        "deadline",
        "The job could not finish before its deadline",
        "Slurm removed the job because it could not end in time.",
        "Retry with less time, or earlier.",
        states=frozenset({"DEADLINE"}),
    ),
    Rule(
        "cancelled",
        "The job was cancelled",
        "Someone cancelled the job before it finished.",
        "If you did not mean to cancel it, press Retry.",
        statuses=frozenset({Status.CANCELLED}),
    ),
    # --- The program failed: what its output says ---
    Rule(
        "module-not-found",
        "A Python module is missing",
        "Python could not import a module your program needs.",
        "Check the module name for typos; use only the packages the assignment provides, "
        "or ask your TA how to install it.",
        log=_re(r"ModuleNotFoundError|ImportError: No module named"),
    ),
    Rule(
        "file-not-found",
        "A file your program needs was not found",
        "Your program tried to open a file that does not exist in the job's directory or data set.",
        "Check the file name and path (upload the file, or pick the right data set), then retry.",
        log=_re(r"FileNotFoundError|No such file or directory"),
    ),
    Rule(
        "syntax-error",
        "Your Python code has a syntax error",
        "Python could not read your program.",
        "Fix the line shown in the error (run it locally first), then submit again.",
        log=_re(r"SyntaxError|IndentationError"),
    ),
    Rule(
        "keyboard-interrupt",
        "The program was interrupted",
        "The program received an interrupt, usually because the job was stopped from outside.",
        "If you did not stop it, retry; if it happens again, tell your TA.",
        log=_re(r"KeyboardInterrupt"),
    ),
    Rule(
        "cuda-error",
        "A GPU (CUDA) error",
        "The program hit an error talking to the GPU.",
        "Check that the job asks for at least one GPU and that the code uses the device it was given. " + CONTACT,
        log=_re(r"CUDA error|no CUDA-capable device|CUDA driver version is insufficient|cudaError"),
    ),
    Rule(
        "nan-loss",
        "Training diverged (the loss became NaN)",
        "The model's loss turned into 'not a number', so training could not continue.",
        "Lower the learning rate or check the input data, then retry.",
        statuses=ENDED | {Status.COMPLETED},
        # Anchored at the line's start: one pass over the line, never a scan from every "loss".
        log=_re(r"^(?=.*\bnan\b).*loss"),
    ),
    Rule(
        "command-not-found",
        "A command in the script does not exist",
        "The script runs a program the cluster does not have (or a misspelled command).",
        "Check the spelling of the command in the output below; ask your TA if it should be installed.",
        log=_re(r"command not found"),
    ),
    Rule(
        "permission-denied",
        "Permission denied",
        "The job tried to read or write a file it is not allowed to.",
        "Write only inside the job's own directory, and read only the data sets of the course.",
        log=_re(r"Permission denied"),
    ),
    Rule(
        "disk-quota",
        "Your disk quota is full",
        "The job could not write because your storage quota is used up.",
        "Delete old outputs you no longer need, then retry.",
        log=_re(r"Disk quota exceeded"),
    ),
    Rule(
        "python-exception",
        "Your Python program raised an error",
        "The program stopped with an exception; the last line of the traceback says which.",
        "Read the error line shown as evidence and the lines above it in the output, fix the code, then retry.",
        log=_re(r"^\s*\w+(?:\.\w+)*(?:Error|Exception)\b.*|Traceback \(most recent call last\)"),
    ),
    Rule(
        "killed",
        "The job was killed",
        "The job was stopped with signal 9 (SIGKILL), most often for using too much memory.",
        "Retry with more memory; if it happens again, tell your TA.",
        signals=frozenset({9}),
        suggest={"mem_mb": 2},
    ),
    Rule(
        "killed",
        "The job was killed",
        "A program in the job was stopped with signal 9 (SIGKILL), most often for using too much memory.",
        "Retry with more memory; if it happens again, tell your TA.",
        log=re.compile(r"\bKilled\b"),
        suggest={"mem_mb": 2},
    ),
    Rule(
        "killed",
        "The job was killed",
        "A program in the job was stopped with signal 9 (exit code 137), most often for using too much memory.",
        "Retry with more memory; if it happens again, tell your TA.",
        exit_codes=frozenset({137}),
        suggest={"mem_mb": 2},
    ),
    Rule(
        "command-not-found",
        "A command in the script does not exist",
        "The script ended with exit code 127, which means a command was not found.",
        "Check the spelling of the commands in the script; ask your TA if one should be installed.",
        exit_codes=frozenset({127}),
    ),
    Rule(
        "nonzero-exit",
        "Your script ended with an error",
        "The script finished with a non-zero exit code, which means something in it failed.",
        "Look at the end of the output and the errors below for the first thing that went wrong, fix it, then retry.",
    ),
    # --- Waiting longer than usual ---
    Rule(
        "waiting-course-gpus",
        "Waiting: all the course's GPUs are in use",
        "All the GPUs your course may use at once are in use by classmates' jobs (or your own).",
        "Nothing to do: the job starts when another course job finishes. A job that needs no GPU is not held back.",
        statuses=PENDING,
        reason=_re(r"^(Assoc|QOS)Grp(GRES|TRES)(RunMinutes)?$"),
    ),
    Rule(
        "waiting-course-limit",
        "Waiting: the course's shared limit is reached",
        "Your course may only use a certain number of GPUs or jobs at once, and classmates' jobs use them now.",
        "Nothing to do: the job starts when other course jobs finish.",
        statuses=PENDING,
        reason=_re(r"^AssocGrp(?!.*Minutes)|^QOSGrp(?!.*Minutes)|RunMinutes"),
    ),
    Rule(
        "waiting-budget",
        "Waiting: the GPU-time budget is used up",
        "The course's (or your) GPU-time budget is spent, so Slurm will not start the job.",
        "Ask your instructor; the job starts only if the budget is raised. You can cancel it.",
        statuses=PENDING,
        reason=_re(r"(?<!Run)Minutes"),  # a GrpTRESMins budget; RunMinutes frees up as running jobs go on
    ),
    Rule(
        "waiting-own-limit",
        "Waiting: you have reached your own limit",
        "You may only run a certain number of jobs or GPUs at once in this course.",
        "Nothing to do: the job starts when one of your other jobs ends.",
        statuses=PENDING,
        reason=_re(r"^AssocMax|^QOSMax"),
    ),
    Rule(
        "waiting-never",
        "This job can never start",
        "Slurm says the request can never be met (too much time for the partition, or a failed dependency).",
        "Cancel the job and submit again with less time or without the dependency.",
        statuses=PENDING,
        reason=_re(r"PartitionTimeLimit|DependencyNeverSatisfied|BadConstraints"),
    ),
    Rule(
        "waiting-nodes",
        "Waiting: the computers it needs are unavailable",
        "The nodes your job needs are down or reserved (for example for a lab session) right now.",
        "Nothing to do: the job starts when the nodes are back or the reservation ends.",
        statuses=PENDING,
        reason=_re(r"ReqNodeNotAvail|Reservation|NodeDown"),
    ),
    Rule(
        "waiting-held",
        "The job is on hold",
        "The job was put on hold and will not start until it is released.",
        "Ask your TA if you did not expect this.",
        statuses=PENDING,
        reason=_re(r"Held"),
    ),
    Rule(
        "waiting-queue",
        "Waiting in the queue",
        "Other jobs are ahead of yours, or your job waits for enough free GPUs.",
        "Nothing to do: it starts by itself.",
        statuses=PENDING,
        reason=_re(r"^(Priority|Resources|None)$"),
    ),
)


def explanation_label(key: str) -> str:
    """The human title of an explanation key ("cuda-out-of-memory" -> "The GPU ran out of memory"); a key the
    catalogue no longer has reads as itself, no key as "No explanation"."""
    if not key:
        return "No explanation"
    return next((rule.title for rule in CATALOGUE if rule.key == key), key)


def failure_explanation_choices() -> list[tuple[str, str]]:
    """(key, title) of the explanations a failed or refused job can have, for a filter."""
    ended_badly = {Status.FAILED, Status.REJECTED}
    return [(rule.key, rule.title) for rule in CATALOGUE if rule.statuses & ended_badly]


@dataclass(frozen=True)
class Explanation:
    key: str
    title: str
    summary: str
    next_step: str
    evidence: tuple[str, ...]
    suggest: dict[str, int]
    #: For a job that failed or was refused: who to ask when it keeps happening (LABQUEUE_SUPPORT_CONTACT).
    contact: str = ""


def log_lines(job: Job, limit: int | None = None) -> list[str]:
    """The last lines of the job's stdout and stderr: a bounded tail of each, never the whole file."""
    limit = limit or settings.LABQUEUE_LOG_TAIL_BYTES
    text = ""
    for name in (job.stdout_name, job.stderr_name):
        tail, _ = files.tail(job.workdir, name, limit)
        text += tail + "\n"
    return text.splitlines()


def _evidence(job: Job, matched: str) -> tuple[str, ...]:
    items = []
    if job.slurm_state:
        items.append(f"Slurm state: {job.slurm_state}" + (f" (by {job.cancelled_by})" if job.cancelled_by else ""))
    if job.exit_code is not None:
        code = f"Exit code: {job.exit_code}"
        if job.exit_signal:
            code += f", signal {job.exit_signal}"
        elif job.exit_code > 128:
            code += f" (128 + {job.exit_code - 128}: killed by signal {job.exit_code - 128})"
        items.append(code)
    if job.reason and job.reason != "None":
        items.append(f"Slurm reason: {job.reason}")
    if job.status == Status.REJECTED and job.message:
        items.append(f"Slurm said: {job.message}")
    if matched:
        items.append(f"From the output: {matched[:300]}")
    return tuple(items)


def explain(job: Job, lines: list[str] | None = None) -> Explanation | None:
    """Why the job failed or waits, or None when there is nothing to explain."""
    if job.status not in (Status.FAILED, Status.CANCELLED, Status.REJECTED, Status.PENDING, Status.COMPLETED):
        return None
    lines = rule_lines(log_lines(job) if lines is None and job.status != Status.PENDING else (lines or []))
    for rule in CATALOGUE:
        matched, line = rule.matches(job, lines)
        if matched:
            return Explanation(
                rule.key, rule.title, rule.summary, rule.next_step, _evidence(job, line), rule.suggest, _contact(job)
            )
    return None


def _contact(job: Job) -> str:
    if job.status not in (Status.FAILED, Status.REJECTED):
        return ""
    return f"If this keeps happening, contact {settings.LABQUEUE_SUPPORT_CONTACT}."


def hint_messages(job: Job, lines: list[str]) -> list[str]:
    return [hint.message for hint in hints_matching(job=job, text="\n".join(lines))]


#: The labels of a job whose state the portal does not know, by what it does not know.
AWAITING_ACCOUNTING = ("awaiting-accounting", "Finished, waiting for the cluster's accounting")
CLUSTER_UNREACHABLE = ("unreachable", "Not sent yet: the portal cannot reach the cluster")
#: A job's message while the cluster does not answer its submission (jobs.dispatch); cleared once Slurm takes it.
CLUSTER_SILENT = (
    "The cluster is not answering right now. Your job is saved and the portal will send it again "
    "automatically; there is nothing you need to do."
)


def status_label(job: Job) -> tuple[str, str]:
    """(key, words) of the job's status label on every surface (its page, the live part, My jobs, the TAs'
    lists): the job's status, except that a job that left the queue before its accounting arrived is not
    called Running or Waiting but finished, waiting for the cluster's accounting, and a job whose send the
    cluster does not answer says so, however often the send is retried meanwhile."""
    if job.status in ACTIVE_IN_SLURM and job.left_queue_at:
        return AWAITING_ACCOUNTING
    if job.status in (Status.QUEUED, Status.SUBMITTING) and job.message == CLUSTER_SILENT:
        # Each retry of the send flips queued -> submitting -> queued within seconds: the truth for the
        # student does not change until the cluster answers, and neither does the label.
        return CLUSTER_UNREACHABLE
    return job.status, job.get_status_display()


def _place_in_line(job: Job) -> str:
    """Where a pending job stands among the jobs it actually waits behind (squeue's rank,
    slurm.parsers.with_queue_positions): a job in a lab's reservation among the lab's jobs, any other among the
    pending jobs of its partition outside reservations."""
    if not job.queue_position:
        return ""
    if job.reservation:
        where = "your lab"
    else:
        where = f"the {job.partition} partition" if job.partition else "its partition"
    if job.queue_position == 1:
        return f" Next to start in {where}."
    ahead = job.queue_position - 1
    return f" {ahead} job{'s' if ahead != 1 else ''} ahead of yours in {where}."


def status_text(job: Job) -> str:
    """One sentence for the job page: what is happening now."""
    if job.status in ACTIVE_IN_SLURM and job.left_queue_at:
        return (
            "Your job has left the cluster's queue: it has finished or was stopped. The portal is waiting "
            "for the cluster's accounting to confirm how it ended."
        )
    if job.status == Status.PENDING:
        explanation = explain(job)
        where = _place_in_line(job)
        text = explanation.summary if explanation else f"Slurm says the job waits because of: {job.reason}."
        return text + where
    if job.status == Status.QUEUED:
        return job.message or "Your job is saved and will be sent to the cluster in a moment."
    if job.status == Status.SUBMITTING:
        return job.message or "Your job is being sent to the cluster."
    if job.status == Status.RUNNING:
        return "Your job is running." + (" A cancel was requested." if job.cancel_requested else "")
    if job.status == Status.COMPLETED:
        return "Your job finished successfully."
    if job.status == Status.CANCELLED:
        return "The job was cancelled."
    if job.status == Status.REJECTED:
        if job.local_failures >= settings.LABQUEUE_DISPATCH_LOCAL_FAILURES:
            return job.message  # refused by the portal, which says why
        return f"The cluster refused this job: {job.message}"
    signal = f", signal {job.exit_signal}" if job.exit_signal else ""
    return f"The job ended with Slurm state {job.slurm_state} (exit code {job.exit_code}{signal})."
