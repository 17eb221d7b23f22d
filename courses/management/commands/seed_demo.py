"""Seed a demo course: an instructor, a TA, students, and a GPU assignment. Idempotent."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from courses.models import Assignment, Course, Dataset, Role
from courses.services import enrollment_set

DEMO_PASSWORD = "labqueue-demo"
PEOPLE = [
    ("instructor1", "Ada", "Instructor", Role.INSTRUCTOR),
    ("ta1", "Tomas", "Assistant", Role.TA),
    ("student1", "Sam", "Student", Role.STUDENT),
    ("student2", "Kim", "Student", Role.STUDENT),
    ("student3", "Lee", "Student", Role.STUDENT),
]
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
PARAMETERS = [
    {"name": "EPOCHS", "type": "int", "default": 10, "min": 1, "max": 30, "help": "Training epochs (1 s each here)."},
    {"name": "LR", "type": "float", "default": 0.01, "min": 0.0001, "max": 1.0, "help": "Learning rate."},
    {"name": "MODEL", "type": "choice", "choices": ["small", "medium", "large"], "default": "small"},
]


class Command(BaseCommand):
    help = "Create the demo course, its people and a GPU assignment (safe to run again)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset-root", default="/var/lib/labqueue/datasets")

    def handle(self, *args, dataset_root: str, **options):
        User = get_user_model()
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
        for username, first, last, role in PEOPLE:
            user, created = User.objects.get_or_create(
                username=username, defaults={"first_name": first, "last_name": last, "netid": username}
            )
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save()
            enrollment_set(user=user, course=course, role=role)
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
        self.stdout.write(self.style.SUCCESS(f"Demo course {course} is ready."))
        for username, _, _, role in PEOPLE:
            self.stdout.write(f"  {role:<10} {username} / {DEMO_PASSWORD}")
