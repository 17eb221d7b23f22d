import json
from datetime import date, timedelta

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from courses.hints import pattern_problem
from courses.models import COURSE_POLICY_FIELDS, Assignment, Course, Hint, LatePolicy
from courses.policy import CEILING_FIELDS, Ceilings, ceiling_problems, resource_problems
from courses.scripting import (
    MAX_PARAMETERS,
    PORTAL_FILE_NAMES,
    Resources,
    shell_value,
    validate_schema,
    validate_template,
)

PARAMETERS_HELP = (
    "Advanced: the parameters as JSON, the same as the editor above (a change here replaces the editor's rows). "
    "Types: int and float (with min, max), choice (with choices), string (with a pattern), bool. Example: "
    '[{"name": "EPOCHS", "type": "int", "default": 5, "min": 1, "max": 50, "help": "Training epochs"}]'
)
PARAMETER_TYPE_CHOICES = [
    ("int", "Whole number"),
    ("float", "Number"),
    ("choice", "Choice from a list"),
    ("string", "Text"),
    ("bool", "Yes or no"),
]


def parameter_field(spec: dict) -> forms.Field:
    """The field a student fills in for one parameter of an assignment's (validated) schema."""
    label = spec.get("label") or spec["name"]
    common = {"label": label, "help_text": spec.get("help", ""), "initial": spec["default"]}
    if spec["type"] == "int":
        return forms.IntegerField(min_value=spec.get("min"), max_value=spec.get("max"), **common)
    if spec["type"] == "float":
        return forms.FloatField(min_value=spec.get("min"), max_value=spec.get("max"), **common)
    if spec["type"] == "choice":
        return forms.ChoiceField(choices=[(c, c) for c in spec["choices"]], **common)
    if spec["type"] == "bool":
        return forms.BooleanField(required=False, **common)
    return forms.CharField(max_length=200, strip=False, required=False, **common)


class ParameterForm(forms.Form):
    """One row of the parameter editor: what a parameter is called, its type, default and rules."""

    name = forms.CharField(max_length=32, help_text="A shell variable name, e.g. EPOCHS.")
    label = forms.CharField(max_length=100, required=False, help_text="What students read; empty: the name.")
    type = forms.ChoiceField(choices=PARAMETER_TYPE_CHOICES, initial="int")
    default = forms.CharField(max_length=200, required=False, strip=False)
    min = forms.CharField(max_length=40, required=False, label="Smallest")
    max = forms.CharField(max_length=40, required=False, label="Largest")
    choices = forms.CharField(max_length=2000, required=False, help_text="For a choice: the options, comma-separated.")
    pattern = forms.CharField(max_length=200, required=False, help_text="For text: a pattern the value must match.")
    help = forms.CharField(max_length=300, required=False, label="Help for students")

    #: Which of the validator's messages belongs to which field of the row.
    FIELD_WORDS = (
        ("default", "default"),
        ("name", "name"),
        ("min", "min"),
        ("max", "max"),
        ("choice", "choices"),
        ("pattern", "pattern"),
    )

    def spec(self) -> dict:
        """The row as a schema entry (only the keys its type uses)."""
        data = self.cleaned_data
        spec = {"name": data["name"], "type": data["type"], "default": data["default"]}
        spec.update({key: data[key] for key in ("label", "help") if data[key]})
        if data["type"] in ("int", "float"):
            spec.update({key: _number(data[key]) for key in ("min", "max") if data[key].strip()})
        elif data["type"] == "choice":
            spec["choices"] = [choice.strip() for choice in data["choices"].split(",") if choice.strip()]
        elif data["type"] == "string" and data["pattern"]:
            spec["pattern"] = data["pattern"]
        return spec

    def clean(self) -> dict:
        data = super().clean()
        if self.errors or not data.get("name"):
            return data
        try:
            (normalised,) = validate_schema([self.spec()])
        except ValidationError as error:
            message = error.messages[0].replace("Parameter 1: ", "").replace(f"Parameter '{data['name']}': ", "")
            field = next((field for word, field in self.FIELD_WORDS if word in message.lower()), None)
            self.add_error(field, message[0].upper() + message[1:])
            return data
        data["normalised"] = normalised
        return data


def _number(text: str) -> int | float | str:
    """A bound typed in the editor as the JSON would hold it (text that is no number is left for the check)."""
    for kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            pass
    return text


class BaseParameterFormSet(forms.BaseFormSet):
    def clean(self) -> None:
        if any(self.errors):
            return
        names = [form.cleaned_data["name"] for form in self.kept_forms()]
        for name in {name for name in names if names.count(name) > 1}:
            raise ValidationError(f"Two parameters are called {name}: give each its own name.")

    def kept_forms(self) -> list[ParameterForm]:
        """The rows in their chosen order, less the deleted and the empty ones."""
        kept = [form for form in self.forms if form.cleaned_data and not form.cleaned_data.get("DELETE")]
        return sorted(kept, key=lambda form: (form.cleaned_data.get("ORDER") is None, form.cleaned_data.get("ORDER")))

    def schema(self) -> list[dict]:
        return [form.cleaned_data["normalised"] for form in self.kept_forms()]


ParameterFormSet = forms.formset_factory(
    ParameterForm, formset=BaseParameterFormSet, extra=1, can_order=True, can_delete=True, max_num=MAX_PARAMETERS
)


def parameter_preview_form(schema: list[dict]) -> forms.Form:
    """The parameter fields as a student will see them (the editor's preview)."""
    form = forms.Form(auto_id="preview_%s")
    for spec in schema:
        form.fields[f"param_{spec['name']}"] = parameter_field(spec)
    return form


def parameter_rows(schema: list[dict]) -> list[dict]:
    """The editor's rows for a schema (the inverse of ParameterForm.spec)."""
    rows = []
    for spec in schema:
        row = {key: spec.get(key, "") for key in ("name", "label", "type", "pattern", "help")}
        row["default"] = shell_value(spec.get("default", ""))
        row.update({key: "" if spec.get(key) is None else str(spec[key]) for key in ("min", "max")})
        row["choices"] = ", ".join(spec.get("choices", []))
        rows.append(row)
    return rows


class AssignmentForm(forms.ModelForm):
    parameters = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}),
        required=False,
        help_text=PARAMETERS_HELP,
    )
    starter_file = forms.FileField(
        required=False, help_text="Optional: a file copied into every job's working directory."
    )

    class Meta:
        model = Assignment
        fields = [
            "title",
            "slug",
            "description",
            "script_template",
            "check_script",
            "parameters",
            "datasets",
            "gpus",
            "cpus",
            "mem_mb",
            "minutes",
            "max_attempts",
            "opens_at",
            "due_at",
            "late_policy",
            "grace_minutes",
            "interactive",
            "interactive_labs_only",
        ]
        labels = {
            "check_script": "Check (automatic feedback)",
            "gpus": "GPUs",
            "cpus": "CPUs",
            "mem_mb": "Memory (MB)",
            "minutes": "Wall time (minutes)",
            "opens_at": "Opens",
            "due_at": "Due",
            "late_policy": "After the due date",
            "grace_minutes": "Grace period (minutes)",
        }
        widgets = {
            "script_template": forms.Textarea(attrs={"rows": 14, "class": "mono"}),
            "check_script": forms.Textarea(attrs={"rows": 8, "class": "mono"}),
            "opens_at": forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
            "due_at": forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        }

    def __init__(self, *args, course: Course, **kwargs):
        super().__init__(*args, **kwargs)
        self.course = course
        self.fields["datasets"].queryset = course.datasets.all()
        self.fields["datasets"].required = False
        # Dates are optional: a form without them (an older client, a script) keeps "no dates, mark late".
        self.fields["late_policy"].required = False
        self.fields["grace_minutes"].required = False
        if self.instance.pk and not self.is_bound:
            self.initial["parameters"] = json.dumps(self.instance.parameters, indent=2)

    def clean_parameters(self) -> list[dict]:
        text = self.cleaned_data["parameters"].strip() or "[]"
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValidationError(f"This is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}.")
        return validate_schema(schema)

    def clean_script_template(self) -> str:
        return validate_template(self.cleaned_data["script_template"])

    def clean_check_script(self) -> str:
        return validate_template(self.cleaned_data.get("check_script") or "")

    def clean_slug(self) -> str:
        slug = self.cleaned_data["slug"]
        clash = Assignment.objects.filter(course=self.course, slug=slug).exclude(pk=self.instance.pk)
        if clash.exists():
            raise ValidationError("Another assignment of this course already uses this short name.")
        return slug

    def clean_starter_file(self):
        upload = self.cleaned_data.get("starter_file")
        if upload and upload.size > settings.LABQUEUE_UPLOAD_MAX_BYTES:
            raise ValidationError(f"Starter files are limited to {settings.LABQUEUE_UPLOAD_MAX_BYTES} bytes.")
        if upload and (problem := upload_name_problem(upload.name)):
            raise ValidationError(problem)
        return upload

    def clean(self) -> dict:
        data = super().clean()
        if all(key in data for key in ("gpus", "cpus", "mem_mb", "minutes")):
            resources = Resources(data["gpus"], data["cpus"], data["mem_mb"], data["minutes"])
            for field, message in resource_problems(
                course=self.course, resources=resources, asker="the assignment asks for"
            ).items():
                self.add_error(field, message)
        data["late_policy"] = data.get("late_policy") or LatePolicy.MARK
        data["grace_minutes"] = data.get("grace_minutes") or 0
        opens, due = data.get("opens_at"), data.get("due_at")
        if opens and due and due <= opens:
            self.add_error("due_at", "The due date must come after the assignment opens.")
        return data


def upload_name_problem(name: str) -> str | None:
    """Why a file cannot be copied into a job directory under this name, or None."""
    if name in PORTAL_FILE_NAMES:
        return f"'{name}' is a file the portal writes itself ({', '.join(PORTAL_FILE_NAMES)}); rename your file."
    if not _safe_upload_name(name):
        return f"'{name}' is not a usable file name."
    return None


def _safe_upload_name(name: str) -> bool:
    return (
        bool(name)
        and "/" not in name
        and "\\" not in name
        and name not in {".", ".."}
        and (not name.startswith("."))
        and all(ord(ch) >= 32 for ch in name)
        and len(name) <= 200
    )


class HintForm(forms.ModelForm):
    class Meta:
        model = Hint
        fields = ["assignment", "state", "pattern", "message"]
        widgets = {"message": forms.Textarea(attrs={"rows": 3})}
        labels = {"state": "Slurm state (optional)", "pattern": "Pattern in the output (optional)"}

    def __init__(self, *args, course: Course, **kwargs):
        super().__init__(*args, **kwargs)
        self.instance.course = course
        self.fields["assignment"].queryset = course.assignments.all()
        self.fields["assignment"].empty_label = "Every assignment of the course"

    def clean_pattern(self) -> str:
        pattern = self.cleaned_data["pattern"]
        problem = pattern_problem(pattern) if pattern else ""
        if problem:
            raise ValidationError(problem)
        return pattern

    def clean_state(self) -> str:
        return self.cleaned_data["state"].strip().upper()

    def clean(self) -> dict:
        data = super().clean()
        if not data.get("pattern") and not data.get("state"):
            raise ValidationError("Give a pattern, a Slurm state, or both: otherwise the hint would show on every job.")
        most = settings.LABQUEUE_MAX_HINTS_PER_COURSE
        if self.instance.pk is None and Hint.objects.filter(course=self.instance.course).count() >= most:
            raise ValidationError(
                f"This course already has {most} hints, the most a course may have (every failed job's page "
                "checks them all). Delete a hint the course no longer needs, or fold two into one pattern."
            )
        return data


WEEKDAYS = [
    (0, "Monday"),
    (1, "Tuesday"),
    (2, "Wednesday"),
    (3, "Thursday"),
    (4, "Friday"),
    (5, "Saturday"),
    (6, "Sunday"),
]


#: What each policy field is called in Slurm, shown under the field's plain help for those who know Slurm
#: (templates/courses/_field.html); instructors read the plain words. Operators' pages use the terms directly.
POLICY_SLURM_TERMS = {
    "max_gpus_per_job": "MaxTRES=gres/gpu (per job)",
    "max_cpus_per_job": "MaxTRES=cpu (per job)",
    "max_mem_mb_per_job": "MaxTRES=mem (per job)",
    "max_minutes_per_job": "MaxWall",
    "max_running_jobs_per_student": "MaxJobs",
    "max_queued_jobs_per_student": "MaxSubmitJobs",
    "gpu_hours_per_student": "GrpTRESMins=gres/gpu (minutes)",
    "max_gpus_course": "GrpTRES=gres/gpu on the course's account",
    "partition": "--partition",
    "qos": "--qos",
}
LAB_GPUS_HELP = "Used instead of nodes where the cluster can reserve single GPUs."
LAB_SLURM_TERMS = {
    "nodes": "reservation Nodes=<node names>",
    "gpus": "reservation TRES=gres/gpu (Slurm 23.11 or later)",
}


def slurm_terms_set(form: forms.BaseForm, terms: dict[str, str]) -> None:
    """Give each named field of `form` its Slurm term (`field.field.slurm_term` in templates)."""
    for name, term in terms.items():
        if name in form.fields:
            form.fields[name].slurm_term = term


class LabSeriesForm(forms.Form):
    """A weekly lab: weekday, time and length, from one date to another, some dates skipped."""

    weekday = forms.TypedChoiceField(choices=WEEKDAYS, coerce=int)
    start_time = forms.TimeField(label="Starts at", widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"))
    minutes = forms.IntegerField(label="Length (minutes)", min_value=1, max_value=24 * 60, initial=110)
    first_date = forms.DateField(label="From", widget=forms.DateInput(attrs={"type": "date"}))
    last_date = forms.DateField(label="To", widget=forms.DateInput(attrs={"type": "date"}))
    skip = forms.CharField(
        label="Skipped dates (optional)",
        required=False,
        help_text="Dates without a lab, e.g. holidays: 2027-03-16, 2027-03-23.",
    )
    nodes = forms.IntegerField(label="GPU nodes", min_value=1, initial=1)
    gpus = forms.IntegerField(label="GPUs", min_value=1, required=False, help_text=LAB_GPUS_HELP)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        slurm_terms_set(self, LAB_SLURM_TERMS)

    def clean_skip(self) -> frozenset[date]:
        days = set()
        for text in self.cleaned_data["skip"].replace(",", " ").split():
            try:
                days.add(date.fromisoformat(text))
            except ValueError:
                raise ValidationError(f"“{text}” is not a date: write dates as YYYY-MM-DD, separated by commas.")
        return frozenset(days)

    def clean(self) -> dict:
        data = super().clean()
        first, last = data.get("first_date"), data.get("last_date")
        if first and last and last < first:
            self.add_error("last_date", "The last date must come on or after the first.")
        if first and last and (last - first).days > settings.LABQUEUE_LAB_MAX_DAYS_AHEAD:
            self.add_error("last_date", f"A weekly lab spans at most {settings.LABQUEUE_LAB_MAX_DAYS_AHEAD} days.")
        if first and first > date.max - timedelta(days=7):
            self.add_error("first_date", "This date is too far ahead.")
        if settings.LABQUEUE_RESERVATION_STRATEGY == "gpus" and not data.get("gpus"):
            self.add_error("gpus", "Give the number of GPUs to reserve.")
        return data


ROSTER_MAX_BYTES = 1024 * 1024


class RosterUploadForm(forms.Form):
    roster = forms.FileField(
        label="Roster CSV",
        help_text="A header row naming netid, email, name and role, then one person per line. Roles: student, "
        "ta, instructor. People enrolled now but missing from the file are dropped from the course.",
    )

    def clean_roster(self) -> str:
        upload = self.cleaned_data["roster"]
        if upload.size > ROSTER_MAX_BYTES:
            raise ValidationError(f"A roster file is limited to {ROSTER_MAX_BYTES // 1024} KB.")
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ValidationError("Save the roster as UTF-8 CSV (in Excel: “CSV UTF-8”).")


class RosterConfirmForm(forms.Form):
    """Carries the previewed CSV and the digest of the previewed plan, so confirming applies exactly that."""

    csv_text = forms.CharField(widget=forms.HiddenInput, strip=False, max_length=ROSTER_MAX_BYTES)
    digest = forms.CharField(widget=forms.HiddenInput, max_length=64)


CAP_FIELDS = {
    "gpus": "max_gpus_per_job",
    "cpus": "max_cpus_per_job",
    "mem_mb": "max_mem_mb_per_job",
    "minutes": "max_minutes_per_job",
}


class CoursePolicyForm(forms.ModelForm):
    """The course's resource policy. Existing assignments must still fit inside it."""

    class Meta:
        model = Course
        fields = COURSE_POLICY_FIELDS
        labels = {
            "max_gpus_per_job": "GPUs per job",
            "max_cpus_per_job": "CPUs per job",
            "max_mem_mb_per_job": "Memory per job (MB)",
            "max_minutes_per_job": "Wall time per job (minutes)",
            "max_running_jobs_per_student": "Running jobs per student",
            "max_queued_jobs_per_student": "Waiting or running jobs per student",
            "gpu_hours_per_student": "GPU-hour budget per student (term)",
            "max_gpus_course": "GPUs for the whole course at once",
            "partition": "Partition",
            "qos": "QOS",
        }

    def __init__(self, *args, ceilings: Ceilings, **kwargs):
        super().__init__(*args, **kwargs)
        self.ceilings = ceilings
        for field, (name, _) in CEILING_FIELDS.items():
            if (ceiling := getattr(ceilings, name)) is not None:
                limit = f"At most {ceiling} (ceiling set by operations staff)."
                self.fields[field].help_text = " ".join(filter(None, [self.fields[field].help_text, limit]))
        self.fields["qos"].help_text = f"Allowed: {', '.join(ceilings.qos) or 'none'}; empty: the site's default."
        allowed = ", ".join(ceilings.partitions) or "none"
        self.fields["partition"].help_text = f"Allowed: {allowed}; empty: the cluster's default."
        slurm_terms_set(self, POLICY_SLURM_TERMS)

    def clean(self) -> dict:
        data = super().clean()
        contact = settings.LABQUEUE_OPERATIONS_CONTACT
        policy = {name: data[name] for name in self.Meta.fields if name in data}
        for field, message in ceiling_problems(policy=policy, ceilings=self.ceilings, contact=contact).items():
            self.add_error(field, message)
        if data.get("max_gpus_course") is not None and data.get("max_gpus_per_job", 0) > data["max_gpus_course"]:
            self.add_error("max_gpus_per_job", "A job cannot ask for more GPUs than the whole course may use.")
        if self.errors:
            return data
        trial = Course(**{name: data[name] for name in CAP_FIELDS.values()})
        for assignment in self.instance.assignments.all():
            for field, message in resource_problems(
                course=trial, resources=Resources(**assignment.default_resources), asker="it asks for"
            ).items():
                self.add_error(CAP_FIELDS[field], f"“{assignment.title}”: {message} Change the assignment first.")
        return data


class LabSessionForm(forms.Form):
    starts_at = forms.DateTimeField(label="Starts", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    ends_at = forms.DateTimeField(label="Ends", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    nodes = forms.IntegerField(label="GPU nodes", min_value=1, initial=1)
    gpus = forms.IntegerField(
        label="GPUs",
        min_value=1,
        required=False,
        help_text=LAB_GPUS_HELP,
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        slurm_terms_set(self, LAB_SLURM_TERMS)

    def clean(self) -> dict:
        data = super().clean()
        starts, ends = data.get("starts_at"), data.get("ends_at")
        if starts and ends and ends <= starts:
            self.add_error("ends_at", "The lab must end after it starts.")
        if starts and starts < timezone.now() - timedelta(minutes=5):
            self.add_error("starts_at", "This time has passed.")
        if settings.LABQUEUE_RESERVATION_STRATEGY == "gpus" and not data.get("gpus"):
            self.add_error("gpus", "Give the number of GPUs to reserve.")
        return data


#: Slurm accounts no course may take: Slurm's own root account (its limits bind the whole cluster).
RESERVED_ACCOUNTS = frozenset({"root"})


class CourseCopyForm(forms.ModelForm):
    """The new term's course: its names and a Slurm account of its own (the policy comes from the old one)."""

    class Meta:
        model = Course
        fields = ["code", "title", "term", "slug", "slurm_account"]
        labels = {"slug": "Short name (in addresses)", "slurm_account": "Cluster account for this term"}
        help_texts = {
            "slurm_account": "A new account the portal creates on the cluster for this course's jobs, "
            "e.g. cs101-2027sp. It cannot be the account of another course, and an account the cluster has for "
            "something else is left alone."
        }

    def clean_slurm_account(self) -> str:
        account = self.cleaned_data["slurm_account"]
        if account.lower() in RESERVED_ACCOUNTS:
            raise ValidationError(f"“{account}” is the cluster's own top account; choose a name for this course.")
        if Course.objects.filter(slurm_account__iexact=account).exists():
            raise ValidationError(
                "Another course already uses this cluster account; each term needs its own, so that its "
                "limits and usage are its own. Choose a new name, e.g. with the term in it."
            )
        return account


ASSIGNMENT_FILE_MAX_BYTES = 128 * 1024


class AssignmentImportForm(forms.Form):
    assignment_file = forms.FileField(
        label="Assignment file (YAML)", help_text="A file exported from LabQueue (Export as YAML on an assignment)."
    )

    def clean_assignment_file(self) -> str:
        upload = self.cleaned_data["assignment_file"]
        if upload.size > ASSIGNMENT_FILE_MAX_BYTES:
            raise ValidationError(
                f"The file is larger than {ASSIGNMENT_FILE_MAX_BYTES // 1024} KB; an assignment file is much smaller."
            )
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError("The file is not UTF-8 text. Export it from LabQueue again, or save it as UTF-8.")


class AssignmentImportConfirmForm(forms.Form):
    yaml_text = forms.CharField(widget=forms.HiddenInput, strip=False)
