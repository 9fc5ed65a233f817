"""nbgrader configuration for a course built on this series; `make student` applies the same (tools/student_edition.py).

Use it as your course's config: `python tools/nbgrader_course.py ~/mha-course` copies it into a new course folder
with every graded notebook as an assignment (teaching/README.md, "Grading with nbgrader", walks through a term).
Change `course_id`; keep the stub and the StudentEdition step, which make a released notebook run top to bottom
and look like the committed student edition (student/).
"""

from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Unicode

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


class StudentEdition(NbGraderPreprocessor):
    """The student's view of a released notebook: stubs expanded, badges and a note for the student copy.

    The teacher's edition collapses every solution cell (`make notebooks`); released, that cell holds the stub the
    student fills in, so it is expanded. The Colab and Binder badges open the student copy (student/), never the
    teacher's edition, and a note under them says what this edition is.
    """

    repository = Unicode("mha-course/multi-head-attention", help="owner/name on GitHub").tag(config=True)
    teacher_link = Bool(True, help="link the teacher's edition (with the answers) from the note").tag(config=True)

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                shown = cell.metadata.get("jupyter", {})
                shown.pop("source_hidden", None)
                shown.pop("outputs_hidden", None)
                if "jupyter" in cell.metadata and not shown:
                    del cell.metadata["jupyter"]
            if cell.cell_type == "markdown":
                cell.source = (
                    cell.source.replace(f"github/{self.repository}/blob/main/notebooks/",
                                        f"github/{self.repository}/blob/main/student/")
                    .replace("?labpath=notebooks%2F", "?labpath=student%2F")
                )
        name = resources.get("unique_key") or resources.get("metadata", {}).get("name", "")
        lines = nb.cells[0].source.split("\n")
        badges = next((i for i, line in enumerate(lines) if "colab.research.google.com" in line), 0)
        lines[badges + 1:badges + 1] = ["", self.note(nb, f"{name}.ipynb")]
        nb.cells[0].source = "\n".join(lines)
        return nb, resources

    def note(self, nb, name):
        """The note under the badges."""
        exercises = any(cell.metadata.get("nbgrader", {}).get("solution") for cell in nb.cells)
        text = "> **Student edition.**"
        if exercises:
            text += (" Each exercise's answer is replaced by `# YOUR CODE HERE` and `pass`: write yours there, then run"
                     " the check cell under it (✓ when every case passes, \"not attempted yet\" until you start).")
        text += " Outputs appear as you run the cells."
        if self.teacher_link:
            url = f"https://github.com/{self.repository}/blob/main/notebooks/{name}"
            answers = "the answers and " if exercises else ""
            text += f" The teacher's edition, with {answers}every output: [{name}]({url})."
        return text


# What `nbgrader generate_assignment` applies (its default list), then StudentEdition.
c.GenerateAssignment.preprocessors = [*GenerateAssignment.class_traits()["preprocessors"].default(), StudentEdition]
