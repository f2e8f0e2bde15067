// Tooltip and lint text: backtick spans become <code>, and nothing is ever parsed as HTML.
import { describe, expect, it } from "vitest";
import { plainText } from "./plainText";

describe("plainText", () => {
  it("turns backtick spans into code elements holding text", () => {
    const box = plainText("Property `<img src=x onerror=alert(1)>` is not expected", "c");
    expect(box.className).toBe("c");
    expect(box.querySelector("img")).toBeNull();
    expect(box.querySelector("code")?.textContent).toBe("<img src=x onerror=alert(1)>");
    expect(box.textContent).toBe("Property <img src=x onerror=alert(1)> is not expected");
  });

  it("keeps an unpaired backtick as text", () => {
    const box = plainText("a `b` c `d");
    expect([...box.querySelectorAll("code")].map((c) => c.textContent)).toEqual(["b"]);
    expect(box.textContent).toBe("a b c `d");
  });

  it("shows markup as markup", () => {
    expect(plainText("<b>x</b> **y**").textContent).toBe("<b>x</b> **y**");
    expect(plainText("<b>x</b>").children).toHaveLength(0);
  });
});
