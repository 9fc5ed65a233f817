"""nbgrader configuration for a course built on this series; `make student` applies the same (tools/student_edition.py).

Use it as your course's config: `python tools/nbgrader_course.py ~/mha-course` copies it into a new course folder
with every graded notebook as an assignment (teaching/README.md, "Grading with nbgrader", walks through a term).
Change `course_id`; keep the stub and the StudentEdition step, which make a released notebook run top to bottom
and look like the committed student edition (student/).
"""

import math
import re
import sys

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.api import MissingEntry
from nbgrader.converters import GenerateAssignment
from nbgrader.plugins import CsvExportPlugin, LateSubmissionPlugin
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor
from traitlets import Bool, Dict, Float, Unicode

c = get_config()  # noqa: F821 - nbgrader defines get_config() when it reads this file

c.CourseDirectory.course_id = "mha-course"

# A solution region becomes a stub that runs: a stubbed function returns None, which the checks of mha_lib.checks
# report as "not attempted yet" without raising, and a stubbed top-level region (`pass`) does nothing, prints
# nothing. So a student
# notebook runs top to bottom. nbgrader's default stub, `raise NotImplementedError()`, would stop "Run All" at the
# first exercise left for later.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\npass"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# The series' notebooks run in seconds, but 08-12 train small models: one cell may take a minute on a grading
# server busy with a whole class. nbgrader's default, 30 s per cell, would fail them for the server's load.
c.Execute.timeout = 300

# A learner who deleted a check cell gets it back before grading (edited check cells are always restored).
c.OverwriteCells.add_missing_cells = True

# Validate (`nbgrader validate`, the Validate button) cuts every line of what it shows at `width` characters
# (nbgrader's default, 90, cut the hints in half). The longest line a check prints is 312 characters (notebook 12's
# load_attention hint); a translated hint runs up to a third longer. tests/test_classroom_kit.py runs every check
# on its known bugs and fails if a line would be cut. On a JupyterHub, the Validate button reads the users' own
# nbgrader config: put this line in the global one too (teaching/README.md, step 1).
c.Validator.width = 480

# Submissions downloaded from a learning platform (`nbgrader zip_collect NN_name`, teaching/README.md step 4): put
# the platform's zip in downloaded/NN_name/archive/; zip_collect unpacks it and reads the student id and the
# notebook's name from each file's path with this regular expression (groups student_id and file_id; file_id may
# leave out ".ipynb"). Uncomment the one for your platform; tests/test_zip_collect.py collects a fake download of
# each with real nbgrader. The student id is the platform's number, so the gradebook lists students by it (import the
# platform's roster with the same ids: `tools/nbgrader_course.py COURSE --roster export.csv`, step 2 of the guide).
# A copy a browser renamed when the student downloaded it twice ("04_masks_and_dropout (1).ipynb", "..._1",
# "...-1") is collected as the assignment's notebook; a student with two such files in one download stops
# zip_collect with "Duplicate submission file" (nbgrader cannot tell which is newer): delete the older one from
# extracted/ and run it again.
# Moodle, "Download all submissions" (in folders, or flat):
#   "Ada Lovelace_12345_assignsubmission_file_/04_masks_and_dropout.ipynb"
#   "Ada Lovelace_12345_assignsubmission_file_04_masks_and_dropout (1).ipynb"
MOODLE = r".*_(?P<student_id>\d+)_assignsubmission_file_/?(?P<file_id>\d\d_\w+?)(?: ?\(\d+\)|[_-]\d+)?\.ipynb$"
# Canvas, "Download Submissions" (user id, then submission id; "late" for a late one; "-1" for a second upload):
#   "lovelaceada_12345_67890_04_masks_and_dropout.ipynb", "lovelaceada_late_12345_67891_04_masks_and_dropout-1.ipynb"
CANVAS = (r".*/[^/_]+_(?:(?i:late)_)?(?P<student_id>\d+)_\d+_(?P<file_id>\d\d_[a-z_]+?)(?: ?\(\d+\)|[_-]\d+)?"
          r"\.ipynb$")
# c.FileNameCollectorPlugin.named_regexp = MOODLE  # or CANVAS


TEACHER_ONLY = re.compile(r"<!--\s*teacher\s*-->.*?<!--\s*/teacher\s*-->", re.S)
STUDENT_ONLY = re.compile(r"<!--\s*student:\s*(.*?)\s*-->", re.S)


def for_students(markdown: str) -> str:
    """``markdown`` as the student copy shows it: teacher-only regions deleted, student-only comments revealed.

    ``<!-- teacher -->TEXT<!-- /teacher -->`` goes (TEXT may span lines and paragraphs); ``<!-- student: TEXT -->``
    becomes TEXT. HTML comments are invisible in the teacher's edition, so it shows only the teacher's words.
    A paragraph left empty is removed with its blank lines.
    """
    if "<!--" not in markdown:
        return markdown
    text = STUDENT_ONLY.sub(lambda m: m.group(1), TEACHER_ONLY.sub("", markdown))
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


class StudentEdition(NbGraderPreprocessor):
    """The student's view of a released notebook: stubs expanded, student wording, badges and a note.

    The teacher's edition collapses every solution cell (`make notebooks`); released, that cell holds the stub the
    student fills in, so it is expanded. Teacher-only passages are replaced by their student wording
    (``for_students``). Each check cell is tagged ``raises-exception``: a check that does not pass raises (so
    Validate fails it), and with the tag JupyterLab's "Run All" carries on past it. The Colab and Binder badges open
    the student copy (student/), never the teacher's edition, at ``ref`` (a tag pins a term: the setup cell then
    installs mha_lib at that tag too), and a note under them says what this edition is.
    """

    repository = Unicode("mha-course/multi-head-attention", help="owner/name on GitHub").tag(config=True)
    teacher_link = Bool(True, help="link the teacher's edition (with the answers) from the note").tag(config=True)
    ref = Unicode("main", help="the git tag or commit the badges open and the setup cell installs").tag(config=True)
    edition = Unicode("", help="the folder of a translated edition, such as 'pt-BR/' (empty: English)").tag(config=True)
    words = Dict(help="the note's sentences in the edition's language: English -> translation").tag(config=True)
    badges = Bool(True, help="keep the Colab and Binder badges (False: a release handed out on a hub or "
                             "a learning platform, whose badges would open the public copy)").tag(config=True)
    for_students = staticmethod(for_students)
    # The teacher's edition's words that are not true of a student's install -> what the student copy says
    # (in a translated edition, both through ``words``). Matched across line breaks.
    REPHRASE = {
        "on your machine `make lab` has already installed everything into `.venv`":
            "on your machine the install of INSTALL.md (or `make lab` in a clone) has already put everything"
            " into `.venv`",
        "locally `make lab` already did.": "locally, INSTALL.md's install (or `make lab`) already did.",
    }
    # Said by a student copy that links the teacher's edition at the top; a graded release links nothing.
    LINKED = {
        " The edition with the answers and every output is in the repository's `notebooks/` folder (linked at the"
        " top).": "",
        "in the edition with every output, linked at the top": "in the edition with every output",
    }

    def reword(self, text):
        """``text`` with REPHRASE (and, without the teacher's link, LINKED) applied in the edition's language."""
        pairs = {**self.REPHRASE, **({} if self.teacher_link else self.LINKED)}
        for old, new in pairs.items():
            old, new = self.say(old), (self.say(new) if new else "")
            pattern = r"\s+".join(re.escape(word) for word in old.split())
            text = re.sub((r"\s*" if old[0].isspace() else "") + pattern, lambda _, new=new: new, text)
        return text

    def preprocess(self, nb, resources):
        github = f"github/{self.repository}/blob"
        labpath = self.edition.replace("/", "%2F")
        for cell in nb.cells:
            grader = cell.metadata.get("nbgrader", {})
            if grader.get("solution"):
                shown = cell.metadata.get("jupyter", {})
                shown.pop("source_hidden", None)
                shown.pop("outputs_hidden", None)
                if "jupyter" in cell.metadata and not shown:
                    del cell.metadata["jupyter"]
            if cell.cell_type == "code" and grader.get("grade") and not grader.get("solution"):
                tags = cell.metadata.setdefault("tags", [])
                if "raises-exception" not in tags:
                    tags.append("raises-exception")
            if cell.cell_type == "markdown":
                cell.source = (
                    self.reword(for_students(cell.source))
                    .replace(f"{github}/main/{self.edition}notebooks/", f"{github}/{self.ref}/{self.edition}student/")
                    .replace(f"gh/{self.repository}/main?labpath={labpath}notebooks%2F",
                             f"gh/{self.repository}/{self.ref}?labpath={labpath}student%2F")
                )
            if cell.cell_type == "code":
                cell.source = self.reword(cell.source)
            if cell.cell_type == "code" and self.ref != "main":
                cell.source = cell.source.replace(f'git+https://github.com/{self.repository}"',
                                                  f'git+https://github.com/{self.repository}@{self.ref}"')
        nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
        name = resources.get("unique_key") or resources.get("metadata", {}).get("name", "")
        lines = nb.cells[0].source.split("\n")
        badges = next((i for i, line in enumerate(lines) if "colab.research.google.com" in line), 0)
        lines[badges + 1:badges + 1] = ["", self.note(nb, f"{name}.ipynb")]
        if not self.badges and "colab.research.google.com" in lines[badges]:
            del lines[badges:badges + 2]  # the badge line and the blank line before the note
        nb.cells[0].source = "\n".join(lines)
        return nb, resources

    def say(self, english):
        """``english`` in the edition's language (``words``; English where it has none)."""
        return self.words.get(english, english)

    def note(self, nb, name):
        """The note under the badges."""
        exercises = any(cell.metadata.get("nbgrader", {}).get("solution") for cell in nb.cells)
        text = "> **" + self.say("Student edition.") + "**"
        if exercises:
            text += " " + self.say(
                "Each exercise's answer is replaced by `# YOUR CODE HERE` and `pass`, or by YOUR ANSWER HERE"
                " for a written answer: write yours there. Run the check cell under a function you wrote: it"
                " prints ✓ when every case passes, and otherwise stops with \"not attempted yet\" or the first"
                " failing case (that cell, and nbgrader's Validate, fail until you get ✓).")
        text += " " + self.say("Outputs appear as you run the cells.")
        if self.teacher_link:
            url = f"https://github.com/{self.repository}/blob/{self.ref}/{self.edition}notebooks/{name}"
            key = ("The teacher's edition, with the answers and every output: {link}." if exercises
                   else "The teacher's edition, with every output: {link}.")
            text += " " + self.say(key).format(link=f"[{name}]({url})")
        return text


# What `nbgrader generate_assignment` applies (its default list), then StudentEdition.
c.GenerateAssignment.preprocessors = [*GenerateAssignment.class_traits()["preprocessors"].default(), StudentEdition]


# Feedback keeps the hidden tests hidden. `nbgrader generate_feedback` renders the autograded notebook, into which
# autograde put the hidden tests back: by default every student's feedback shows them, your own hidden cases
# included (teaching/README.md, "Your own hidden case"). nbgrader's own ClearHiddenTests, added to the feedback's
# preprocessors, removes each `### BEGIN/END HIDDEN TESTS` region from the page; the verdict of a failed check (its
# case, what differs, the hint) still shows, without the code of the case. tests/test_kit_roundtrip.py checks it on
# real feedback.
c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ClearHiddenTests]


class MarkedCsvExport(CsvExportPlugin):
    """`nbgrader export`'s grades.csv, refused while a written answer of a submission waits for its hand mark.

    nbgrader counts an unmarked written answer as 0, so an export before marking is complete gives silent zeros.
    This export lists the submissions with answers left to mark and stops (exit 1), unless
    ``--MarkedCsvExport.allow_unmarked=True`` (a provisional export, with a warning). The student ids are the
    roster's (step 2 of the guide), with its names and e-mail addresses.
    """

    allow_unmarked = Bool(False, help="export although answers wait for a hand mark (provisional)").tag(config=True)

    def unmarked(self, gradebook):
        """``{(assignment, student id): answers left to mark}`` over what this export covers."""
        waiting = {}
        for assignment in gradebook.assignments:
            if self.assignment and assignment.name not in self.assignment:
                continue
            for student in gradebook.students:
                if self.student and student.id not in self.student:
                    continue
                try:
                    submission = gradebook.find_submission(assignment.name, student.id)
                except MissingEntry:
                    continue
                left = sum(1 for notebook in submission.notebooks for grade in notebook.grades
                           if grade.needs_manual_grade)
                if left:
                    waiting[(assignment.name, student.id)] = left
        return waiting

    def export(self, gradebook):
        waiting = self.unmarked(gradebook)
        if waiting and not self.allow_unmarked:
            listed = ", ".join(f"{a} of {s} ({n})" for (a, s), n in sorted(waiting.items())[:10])
            self.log.error("%d submission(s) have written answers not marked yet, which nbgrader would count as 0: "
                           "%s%s. Mark them in formgrader (Manual Grading), or export a provisional file with "
                           "--MarkedCsvExport.allow_unmarked=True.", len(waiting), listed,
                           " ..." if len(waiting) > 10 else "")
            sys.exit(1)
        super().export(gradebook)
        if waiting:
            self.log.warning("provisional export: %d submission(s) have answers not marked yet, counted as 0",
                             len(waiting))

c.ExportApp.plugin_class = MarkedCsvExport


class LatePolicy(LateSubmissionPlugin):
    """Late work: always recorded; penalised ``per_day`` of its score per started day late, after any extension.

    nbgrader compares a submission's timestamp (``nbgrader collect`` or ``submit`` records it) with the assignment's
    due date (``tools/nbgrader_course.py COURSE --due NN=DATE``). With ``per_day = 0`` (the default) a late
    submission is only recorded: formgrader and grades.csv show its timestamp, and the log says how late it is.
    ``extensions`` moves the due date of one student, for every assignment (``{"12345": 48}``, in hours) or for
    some (``{"12345": {"04_masks_and_dropout": 48}}``). A platform's zip download carries no timestamps: there
    the platform says what was late (Canvas names the file ``late``; Moodle shows it), and this policy sees none.
    """

    per_day = Float(0.0, help="the share of the score deducted per started day late (0.1: 10 % a day)").tag(config=True)
    extensions = Dict(help="student id -> hours, or student id -> {assignment id: hours}").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        extra = self.extensions.get(student_id, 0)
        if isinstance(extra, dict):
            extra = extra.get(getattr(self.parent, "assignment_id", ""), 0)
        late = total_seconds_late - float(extra) * 3600
        if late <= 0 or self.per_day <= 0:
            return 0.0
        return min(score, score * self.per_day * math.ceil(late / 86400))


# c.LatePolicy.per_day = 0.1  # 10 % of the score for each started day late
# c.LatePolicy.extensions = {"12345": 48}  # two more days for student 12345, every assignment
c.AssignLatePenalties.plugin_class = LatePolicy
