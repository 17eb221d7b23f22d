"""The forms of a job request: submitting a job of an assignment, editing and resubmitting an attempt, and
retrying one with other resources. All three ask for resources through ResourcesForm, checked against the
course's limits; the submission form adds the assignment's parameters, data set and files."""

import re
import uuid

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from courses.forms import parameter_field, upload_name_problem
from courses.models import Assignment, Course
from courses.policy import resource_problems
from courses.scripting import Resources, validate_values
from jobs.models import Job

RESOURCE_NAMES = ("gpus", "cpus", "mem_mb", "minutes")


def new_submission_key() -> str:
    """A one-time key for one showing of the submission form: the same form sent twice gives one job."""
    return uuid.uuid4().hex


def submission_key(raw: str) -> str:
    """The form's key when it is one the portal could have made, else blank (then nothing is de-duplicated)."""
    return raw if re.fullmatch(r"[0-9a-f]{32}", raw) else ""


class ResourcesForm(forms.Form):
    """The resources a job asks for, within the course's limits (cleaned_data["resources"])."""

    gpus = forms.IntegerField(label="GPUs", min_value=0)
    cpus = forms.IntegerField(label="CPUs", min_value=1)
    mem_mb = forms.IntegerField(label="Memory (MB)", min_value=100)
    minutes = forms.IntegerField(label="Wall time (minutes)", min_value=1)

    def __init__(self, *args, course: Course, **kwargs):
        super().__init__(*args, **kwargs)
        self.course = course

    def resource_fields(self) -> list:
        return [self[name] for name in RESOURCE_NAMES]

    def clean(self) -> dict:
        data = super().clean()
        if all(name in data for name in RESOURCE_NAMES):
            data["resources"] = Resources(*(data[name] for name in RESOURCE_NAMES))
            for field, message in resource_problems(course=self.course, resources=data["resources"]).items():
                self.add_error(field, message)
        return data


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        if isinstance(data, (list, tuple)):
            return [super(MultipleFileField, self).clean(item, initial) for item in data]
        return [super().clean(data, initial)] if data else []


class SubmissionForm(ResourcesForm):
    """A job request for an assignment: a field per parameter, resources, data set, uploads."""

    uploads = MultipleFileField(required=False, label="Files for the job's directory")

    def __init__(self, *args, assignment: Assignment, **kwargs):
        super().__init__(*args, course=assignment.course, **kwargs)
        self.assignment = assignment
        course = assignment.course
        for name, value in assignment.default_resources.items():
            self.fields[name].initial = value
        self.fields["gpus"].help_text = f"At most {course.max_gpus_per_job} in this course."
        self.fields["cpus"].help_text = f"At most {course.max_cpus_per_job}."
        self.fields["mem_mb"].help_text = f"At most {course.max_mem_mb_per_job} MB."
        self.fields["minutes"].help_text = f"At most {course.max_minutes_per_job} minutes."
        self.parameter_names = []
        for spec in assignment.parameters:
            self.fields[f"param_{spec['name']}"] = parameter_field(spec)
            self.parameter_names.append(spec["name"])
        datasets = list(assignment.datasets.all())
        if datasets:
            self.fields["dataset"] = forms.ChoiceField(
                choices=[(str(d.pk), d.name) for d in datasets],
                help_text="Approved data sets for this assignment; the path is in $DATASET.",
            )
        self.fields[
            "uploads"
        ].help_text = f"Optional. Up to {settings.LABQUEUE_UPLOAD_MAX_BYTES // (1024 * 1024)} MB in all."

    def parameter_fields(self) -> list:
        return [self[f"param_{name}"] for name in self.parameter_names]

    def clean_uploads(self) -> list:
        uploads = self.cleaned_data.get("uploads") or []
        if sum(upload.size for upload in uploads) > settings.LABQUEUE_UPLOAD_MAX_BYTES:
            raise ValidationError(
                f"The files add up to more than {settings.LABQUEUE_UPLOAD_MAX_BYTES // (1024 * 1024)} MB."
            )
        for upload in uploads:
            if problem := upload_name_problem(upload.name):
                raise ValidationError(problem)
        return uploads

    def clean(self) -> dict:
        data = super().clean()
        raw = {name: data[f"param_{name}"] for name in self.parameter_names if f"param_{name}" in data}
        if len(raw) == len(self.parameter_names):
            try:
                data["values"] = validate_values(self.assignment.parameters, raw)
            except ValidationError as error:
                for name, messages in error.message_dict.items():
                    self.add_error(f"param_{name}" if name in self.parameter_names else None, messages)
        if "dataset" in self.fields and data.get("dataset"):
            data["dataset"] = self.assignment.datasets.get(pk=int(data["dataset"]))
        else:
            data["dataset"] = None
        return data

    def job_request(self) -> dict:
        """What the valid form asks for, as job_submit and job_resubmit take it."""
        return {name: self.cleaned_data[name] for name in ("values", "resources", "dataset")}


class RetryForm(ResourcesForm):
    """Resources for a retry, pre-filled with the explanation's suggestion."""

    def __init__(self, *args, job: Job, **kwargs):
        super().__init__(*args, course=job.assignment.course, **kwargs)
        self.job = job
        course = job.assignment.course
        self.fields["gpus"].help_text = f"Was {job.gpus}; at most {course.max_gpus_per_job}."
        self.fields["cpus"].help_text = f"Was {job.cpus}; at most {course.max_cpus_per_job}."
        self.fields["mem_mb"].help_text = f"Was {job.mem_mb} MB; at most {course.max_mem_mb_per_job} MB."
        self.fields["minutes"].help_text = f"Was {job.minutes}; at most {course.max_minutes_per_job} minutes."


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

    def __init__(self, *args, job: Job, kept: list[str], resources: dict[str, int] | None = None, **kwargs):
        super().__init__(*args, assignment=job.assignment, **kwargs)
        for name in self.parameter_names:
            if name in job.parameters:
                self.fields[f"param_{name}"].initial = job.parameters[name]
        if "dataset" in self.fields and job.dataset_id is not None:
            self.fields["dataset"].initial = str(job.dataset_id)
        for name, value in (job.resources | (resources or {})).items():
            self.fields[name].initial = value
        keep = self.fields["keep"]
        keep.choices, keep.initial = [(name, name) for name in kept], list(kept)
        keep.label = f"Files kept from attempt {job.attempt}"
        keep.help_text = "Untick a file to leave it out; a file you choose below replaces the one of its name."
        self.fields["uploads"].label = "Replacement or extra files"


def resources_from_query(query, *, course: Course) -> dict[str, int]:
    """The resources a link asks the resubmit form to start with (jobs.efficiency.Suggestion.query): each a whole
    number, brought within the form's smallest value and the course's limit; anything else is left out."""
    limits = {
        "gpus": course.max_gpus_per_job,
        "cpus": course.max_cpus_per_job,
        "mem_mb": course.max_mem_mb_per_job,
        "minutes": course.max_minutes_per_job,
    }
    resources = {}
    for name in RESOURCE_NAMES:
        raw = query.get(name, "")
        if raw.isascii() and raw.isdigit() and len(raw) < 10:  # "²" is a digit to isdigit(), not to int()
            resources[name] = max(ResourcesForm.base_fields[name].min_value, min(int(raw), limits[name]))
    return resources
