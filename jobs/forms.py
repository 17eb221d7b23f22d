from django import forms

from courses.policy import resource_problems
from courses.scripting import Resources
from jobs.models import Job


class RetryForm(forms.Form):
    """Resources for a retry, pre-filled with the explanation's suggestion."""

    gpus = forms.IntegerField(label="GPUs", min_value=0)
    cpus = forms.IntegerField(label="CPUs", min_value=1)
    mem_mb = forms.IntegerField(label="Memory (MB)", min_value=100)
    minutes = forms.IntegerField(label="Wall time (minutes)", min_value=1)

    def __init__(self, *args, job: Job, **kwargs):
        super().__init__(*args, **kwargs)
        self.job = job
        course = job.assignment.course
        self.fields["gpus"].help_text = f"Was {job.gpus}; at most {course.max_gpus_per_job}."
        self.fields["cpus"].help_text = f"Was {job.cpus}; at most {course.max_cpus_per_job}."
        self.fields["mem_mb"].help_text = f"Was {job.mem_mb} MB; at most {course.max_mem_mb_per_job} MB."
        self.fields["minutes"].help_text = f"Was {job.minutes}; at most {course.max_minutes_per_job} minutes."

    def clean(self) -> dict:
        data = super().clean()
        if all(key in data for key in ("gpus", "cpus", "mem_mb", "minutes")):
            data["resources"] = Resources(data["gpus"], data["cpus"], data["mem_mb"], data["minutes"])
            for field, message in resource_problems(
                course=self.job.assignment.course, resources=data["resources"]
            ).items():
                self.add_error(field, message)
        return data


class NoteForm(forms.Form):
    text = forms.CharField(label="Note to the student", max_length=4000, widget=forms.Textarea(attrs={"rows": 3}))
