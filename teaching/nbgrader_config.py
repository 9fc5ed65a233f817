"""nbgrader configuration for a course built on this series; `make student` applies the same (tools/student_edition.py).

Use it as your course's config: `python tools/nbgrader_course.py ~/mha-course` copies it into a new course folder
with every graded notebook as an assignment (teaching/README.md, "Grading with nbgrader", walks through a term).
Change `course_id`; keep the stub and the StudentEdition step, which make a released notebook run top to bottom
and look like the committed student edition (student/).
"""

import re

from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Dict, Unicode

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

# Submissions downloaded from a learning platform (`nbgrader zip_collect NN_name`, teaching/README.md step 4): put
# the platform's zip in downloaded/NN_name/archive/; zip_collect unpacks it and reads the student id and the
# notebook's name from each file's path with this regular expression (groups student_id and file_id; file_id may
# leave out ".ipynb"). Uncomment the one for your platform; tests/test_zip_collect.py collects a fake download of
# each with real nbgrader. The student id is the platform's number, so the gradebook lists students by it.
# Moodle, "Download all submissions" (in folders, or flat):
#   "Ada Lovelace_12345_assignsubmission_file_/04_masks_and_dropout.ipynb"
#   "Ada Lovelace_12345_assignsubmission_file_04_masks_and_dropout.ipynb"
MOODLE = r".*_(?P<student_id>\d+)_assignsubmission_file_/?(?P<file_id>\d\d_\w+?)\.ipynb$"
# Canvas, "Download Submissions" (user id, then submission id; "late" for a late one; "-1" for a second upload):
#   "lovelaceada_12345_67890_04_masks_and_dropout.ipynb", "lovelaceada_late_12345_67891_04_masks_and_dropout-1.ipynb"
CANVAS = r".*/[^/_]+_(?:late_)?(?P<student_id>\d+)_\d+_(?P<file_id>\d\d_[a-z_]+?)(?:-\d+)?\.ipynb$"
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
    for_students = staticmethod(for_students)

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
                    for_students(cell.source)
                    .replace(f"{github}/main/{self.edition}notebooks/", f"{github}/{self.ref}/{self.edition}student/")
                    .replace(f"gh/{self.repository}/main?labpath={labpath}notebooks%2F",
                             f"gh/{self.repository}/{self.ref}?labpath={labpath}student%2F")
                )
            if cell.cell_type == "code" and self.ref != "main":
                cell.source = cell.source.replace(f'git+https://github.com/{self.repository}"',
                                                  f'git+https://github.com/{self.repository}@{self.ref}"')
        nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
        name = resources.get("unique_key") or resources.get("metadata", {}).get("name", "")
        lines = nb.cells[0].source.split("\n")
        badges = next((i for i, line in enumerate(lines) if "colab.research.google.com" in line), 0)
        lines[badges + 1:badges + 1] = ["", self.note(nb, f"{name}.ipynb")]
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
