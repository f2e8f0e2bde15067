// How each kind of policy layer is named on screen (the layer tabs, traces and the layers panel).
import type { LayerFile } from "../../backend/backend";

export const LAYER_KIND: Record<LayerFile["kind"], string> = {
  user: "user",
  project: "project",
  named: "named file",
  built_in: "built-in default",
};
