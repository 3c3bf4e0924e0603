// Run alone (`node tests/tasks/run.mjs`), the suite finds the binaries where scripts/build puts
// them; under ctest the environment names them (as for tests/e2e, whose helpers it reuses).
// Imported before ../e2e/harness.mjs, which requires these three variables.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
process.env.CODEMODE_SOURCE_DIR ??= ROOT;
process.env.CODEMODE_BIN ??= join(ROOT, 'build/codemode-mcp');
process.env.MARKETHUB_FIXTURE_BIN ??= join(ROOT, 'build/fixtures/markethub/markethub-fixture');
