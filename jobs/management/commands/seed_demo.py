"""Seed the demo (scripts/demo runs it): a course with an instructor, a TA and students, a GPU assignment, a
notebook assignment (a JupyterLab session on a GPU, opened through the demo's nginx), and an operator of the
site. Idempotent. In jobs, not courses: it also sets the people's job mail choices.

When the site has the lab's second cluster (lab2 in LABQUEUE_SLURM_OTHER_CLUSTERS, as scripts/demo sets it), a
second small course is bound to it, with the same people and the same GPU assignment: one course per cluster. Its
people's associations on lab2 are reconciled as the first course's are on lab (enrollment_set asks for it).

Every persona of the portal can sign in: the course's people with their addresses (student3 has none, as
when the campus sign-in sends none, to show a student giving their own), and ops1, the operations staff
account that reaches the admin, the usage reports and the cluster associations page.
"""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from courses.models import Assignment, Course, Dataset, Role
from courses.services import enrollment_set
from jobs.models import NotificationPreference

DEMO_PASSWORD = "labqueue-demo"
DOMAIN = "cs101.example.edu"
#: (username, first name, last name, role in the course, e-mail address)
PEOPLE = [
    ("instructor1", "Ada", "Instructor", Role.INSTRUCTOR, f"instructor1@{DOMAIN}"),
    ("ta1", "Tomas", "Assistant", Role.TA, f"ta1@{DOMAIN}"),
    ("student1", "Sam", "Student", Role.STUDENT, f"student1@{DOMAIN}"),
    ("student2", "Kim", "Student", Role.STUDENT, f"student2@{DOMAIN}"),
    ("student3", "Lee", "Student", Role.STUDENT, ""),
]
#: The second course's cluster: the lab's second cluster (scripts/labcluster up-lab2).
SECOND_CLUSTER = "lab2"
#: The site's operator: staff and superuser, in no course.
OPERATOR = ("ops1", "Olu", "Operations", f"ops1@{DOMAIN}")
SCRIPT = """\
echo "Hello from $(hostname), running as $(whoami)"
echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
echo "Training $MODEL for $EPOCHS epochs, learning rate $LR, data in $DATASET"
mkdir -p results
for epoch in $(seq 1 "$EPOCHS"); do
  echo "epoch $epoch loss $(awk -v e="$epoch" 'BEGIN { printf "%.4f", 1 / e }')"
  sleep 1
done
echo "model=$MODEL epochs=$EPOCHS lr=$LR" > results/metrics.txt
echo "Done. Results are in results/metrics.txt"
"""
#: The notebook assignment's script only prepares the session; JupyterLab is started after it (jobs/sessions.py).
NOTEBOOK_SCRIPT = """\
echo "Session on $(hostname) as $(whoami), CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
"""
PARAMETERS = [
    {"name": "EPOCHS", "type": "int", "default": 10, "min": 1, "max": 30, "help": "Training epochs (1 s each here)."},
    {"name": "LR", "type": "float", "default": 0.01, "min": 0.0001, "max": 1.0, "help": "Learning rate."},
    {"name": "MODEL", "type": "choice", "choices": ["small", "medium", "large"], "default": "small"},
]


class Command(BaseCommand):
    help = "Create the demo course, its people, a GPU assignment and a notebook one (safe to run again)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset-root", default="/var/lib/labqueue/datasets")

    def handle(self, *args, dataset_root: str, **options):
        course = self._course()
        self._people(course)
        self._operator()
        self._assignment(course, dataset_root=dataset_root)
        self._notebook(course)
        self.stdout.write(self.style.SUCCESS(f"Demo course {course} is ready."))
        if SECOND_CLUSTER in settings.LABQUEUE_SLURM_OTHER_CLUSTERS:
            second = self._second_course()
            self._people(second)
            self._assignment(second, dataset_root=dataset_root)
            self.stdout.write(self.style.SUCCESS(f"Demo course {second} is ready, on the cluster {SECOND_CLUSTER}."))
        for username, _, _, role, email in PEOPLE:
            self.stdout.write(f"  {role:<10} {username} / {DEMO_PASSWORD}  {email or '(no address)'}")
        self.stdout.write(f"  {'operator':<10} {OPERATOR[0]} / {DEMO_PASSWORD}  {OPERATOR[3]}")

    @staticmethod
    def _course() -> Course:
        course, _ = Course.objects.update_or_create(
            slug="cs101-demo",
            defaults={
                "code": "CS101",
                "title": "Introduction to GPU Computing",
                "term": "Demo term",
                "slurm_account": "cs101",
                "partition": "gpu",
                "max_gpus_per_job": 1,
                "max_cpus_per_job": 4,
                "max_mem_mb_per_job": 8000,
                "max_minutes_per_job": 30,
            },
        )
        return course

    @staticmethod
    def _second_course() -> Course:
        """A small course on the second cluster: its jobs are sent there (sbatch -M lab2)."""
        course, _ = Course.objects.update_or_create(
            slug="cs102-demo",
            defaults={
                "code": "CS102",
                "title": "GPU Computing on the Second Cluster",
                "term": "Demo term",
                "slurm_account": "cs102",
                "partition": "gpu",
                "cluster": SECOND_CLUSTER,
                "max_gpus_per_job": 1,
                "max_cpus_per_job": 2,
                "max_mem_mb_per_job": 4000,
                "max_minutes_per_job": 15,
            },
        )
        return course

    def _people(self, course: Course) -> None:
        """The course's people, enrolled in their roles, with their job mail choices."""
        for username, first, last, role, email in PEOPLE:
            user = self._person(username, first, last, email, netid=username)
            enrollment_set(user=user, course=course, role=role)
            # Mail when a job finishes too, so the demo's first job fills the inbox (var/demo/mail); choices
            # changed on the notifications page are kept.
            NotificationPreference.objects.get_or_create(
                user=user, defaults={"notify_finished": True, "daily_digest": role != Role.STUDENT}
            )

    def _operator(self) -> None:
        operator = self._person(*OPERATOR, netid=None)  # runs no jobs: no cluster account
        if not (operator.is_staff and operator.is_superuser):
            operator.is_staff = operator.is_superuser = True
            operator.save(update_fields=["is_staff", "is_superuser"])

    @staticmethod
    def _assignment(course: Course, *, dataset_root: str) -> Assignment:
        """The GPU assignment, with a small data set made under `dataset_root`."""
        data_dir = Path(dataset_root) / "digits-sample"
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "README.txt").write_text("A tiny sample data set for the LabQueue demo.\n")
        dataset, _ = Dataset.objects.update_or_create(
            course=course, name="Digits (sample)", defaults={"path": str(data_dir)}
        )
        assignment, _ = Assignment.objects.update_or_create(
            course=course,
            slug="gpu-hello",
            defaults={
                "title": "Lab 1: Hello, GPU",
                "description": "Train a toy model on one GPU and download its results.",
                "script_template": SCRIPT,
                "parameters": PARAMETERS,
                "gpus": 1,
                "cpus": 1,
                "mem_mb": 1000,
                "minutes": 5,
            },
        )
        assignment.datasets.set([dataset])
        return assignment

    @staticmethod
    def _notebook(course: Course) -> Assignment:
        """The interactive assignment: Start session runs JupyterLab as the student on one GPU for 30 minutes."""
        assignment, _ = Assignment.objects.update_or_create(
            course=course,
            slug="notebook",
            defaults={
                "title": "Notebook: explore the GPU",
                "description": "Start a JupyterLab session on one GPU, run a cell, save the notebook, stop it.",
                "script_template": NOTEBOOK_SCRIPT,
                "parameters": [],
                "interactive": True,
                "gpus": 1,
                "cpus": 1,
                "mem_mb": 2000,
                "minutes": 30,
            },
        )
        return assignment

    @staticmethod
    def _person(username: str, first: str, last: str, email: str, *, netid: str | None):
        """The demo account `username`, made with the demo password the first time; its address (none: left
        as it is, so an address student3 confirmed stays) on every run."""
        user, created = get_user_model().objects.get_or_create(
            username=username,
            defaults={
                "first_name": first,
                "last_name": last,
                "netid": netid,
                "email": email,
            },
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        elif email and user.email != email:
            user.email = email
            user.save(update_fields=["email"])
        return user
