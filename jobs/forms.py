from django import forms

from courses.forms import SubmissionForm
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


class ResubmitForm(SubmissionForm):
    """The assignment's submission form, prefilled with an earlier attempt's request, plus a box per file of
    that attempt to send again (ticked unless the student unticks it or chooses a file of the same name)."""

    keep = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        error_messages={
            "invalid_choice": "The file %(value)s of that attempt is no longer kept (it was removed meanwhile); "
            "choose it again below."
        },
    )

    def __init__(self, *args, job: Job, kept: list[str], **kwargs):
        super().__init__(*args, assignment=job.assignment, **kwargs)
        for name in self.parameter_names:
            if name in job.parameters:
                self.fields[f"param_{name}"].initial = job.parameters[name]
        if "dataset" in self.fields and job.dataset_id is not None:
            self.fields["dataset"].initial = str(job.dataset_id)
        for name, value in job.resources.items():
            self.fields[name].initial = value
        keep = self.fields["keep"]
        keep.choices, keep.initial = [(name, name) for name in kept], list(kept)
        keep.label = f"Files kept from attempt {job.attempt}"
        keep.help_text = "Untick a file to leave it out; a file you choose below replaces the one of its name."
        self.fields["uploads"].label = "Replacement or extra files"
