"""Offline tests of ``generate.py``: the schema-to-type rules on a small document that
has every shape (``fixtures/mini_openapi.json``), and ``--check`` failing when the
snapshot gains a field or a route the committed layer lacks.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PACKAGE))

import generate  # noqa: E402

MINI = json.loads((Path(__file__).resolve().parent / "fixtures" / "mini_openapi.json").read_text())
SNAPSHOT = PACKAGE.parent / "openapi.json"


class RulesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.files = generate.render(MINI)
        cls.models = cls.files["models.py"]
        cls.operations = cls.files["operations.py"]
        cls.api = cls.files["api.py"]

    def test_every_file_starts_with_the_generated_line_and_compiles(self) -> None:
        for name, text in self.files.items():
            self.assertTrue(text.startswith(generate.HEADER + "\n"), name)
            compile(text, name, "exec")
        self.assertEqual(generate.render(MINI), self.files)

    def test_required_optional_and_nullable_fields(self) -> None:
        self.assertIn("    idempotency_key: Optional[str]\n", self.models)
        self.assertIn("    idempotency_key: Union[str, None, Unset] = UNSET\n", self.models)
        self.assertIn(
            '    class_: Union[str, Unset] = field(default=UNSET, metadata={"json": "class"})', self.models
        )
        self.assertIn('    from_: datetime.datetime = field(metadata={"json": "from"})', self.models)

    def test_enums_maps_arrays_unions_and_any_json(self) -> None:
        self.assertIn('    key_scope: Literal["retained", "unfinished"]\n', self.models)
        self.assertIn("    by_type: Dict[str, BatchItem]\n", self.models)
        self.assertIn("    awaited: Optional[List[int]]\n", self.models)
        self.assertIn("    last: Union[BatchItem, None, Unset] = UNSET\n", self.models)
        self.assertIn("    payload: JsonValue\n", self.models)
        self.assertIn("Zone = Optional[str]\n", self.models)  # past MAX_LITERAL values
        self.assertIn('Priority = Union[Literal["low", "high"], int]\n', self.models)
        self.assertIn("List[JsonValue]", self.models.split("JsonWithoutNul = ")[1])
        self.assertIn("class StatsWindow(Model):", self.models)

    def test_operations_carry_parameters_bodies_and_replies(self) -> None:
        self.assertIn('Param("wait", "wait", "query", False),', self.operations)
        self.assertIn('body="application/wasm",', self.operations)
        self.assertIn('204: Reply("empty", None),', self.operations)
        self.assertIn('200: Reply("text", str),', self.operations)
        self.assertIn('200: Reply("json", List[AttemptView]),', self.operations)
        signature = "\n".join(
            [
                "    def get_job(",
                "        self,",
                "        id: int,",
                "        *,",
                "        wait: Optional[str] = None,",
            ]
        )
        self.assertIn(signature, self.api)
        self.assertIn("    async def delete_secret(", self.api)


@unittest.skipUnless(SNAPSHOT.exists(), f"no snapshot at {SNAPSHOT}")
class CheckTest(unittest.TestCase):
    def check(self, document: dict) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(document, f)
        self.addCleanup(Path(f.name).unlink)
        command = [sys.executable, str(PACKAGE / "generate.py"), "--check", "--openapi", f.name]
        return subprocess.run(command, capture_output=True, text=True)

    def test_the_snapshot_passes(self) -> None:
        run = self.check(json.loads(SNAPSHOT.read_text()))
        self.assertEqual(run.returncode, 0, run.stdout[-3000:])

    def test_a_field_added_to_the_document_fails_with_a_diff(self) -> None:
        document = json.loads(SNAPSHOT.read_text())
        document["components"]["schemas"]["JobView"]["properties"]["brand_new_field"] = {"type": "string"}
        run = self.check(document)
        self.assertEqual(run.returncode, 1)
        self.assertIn("+    brand_new_field: Union[str, Unset] = UNSET", run.stdout)

    def test_a_route_added_to_the_document_fails_with_a_diff(self) -> None:
        document = json.loads(SNAPSHOT.read_text())
        document["paths"]["/v1/jobs/{id}/pause"] = {
            "post": copy.deepcopy(document["paths"]["/v1/jobs/{id}/cancel"]["post"])
            | {"operationId": "pause_job"}
        }
        run = self.check(document)
        self.assertEqual(run.returncode, 1)
        self.assertIn("+    def pause_job(", run.stdout)


if __name__ == "__main__":
    unittest.main()
